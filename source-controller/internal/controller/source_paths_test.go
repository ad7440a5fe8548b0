package controller

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The helpers of the "paths out of the working directory" regression tests (bucket_paths_test.go,
// ocirepository_paths_test.go, helmchart_paths_test.go), which replay Flux source-controller's
// CVE-2026-47680, where a Bucket object key escaped the artifact directory: upstream content
// names a path outside the directory the controller assembles an artifact in, and the controller
// writes there, or stores an artifact whose entries point there.

// escapedMarker starts the content of every file an upstream source offers under an unsafe
// name: if one is found anywhere under the sentinel after a reconcile, it escaped.
const escapedMarker = "escaped: "

// pathsSentinel points TMPDIR, where the controllers make their working directories
// (contentDir, the HelmChart's build directory), at <sentinel>/tmp for the rest of the test, and
// returns sentinel: a working directory is <sentinel>/tmp/<kind>-<random>/content, so
// "../../../x" from it is <sentinel>/x. The suite's controllers are shared: the test must not be
// parallel (t.Setenv refuses it).
func pathsSentinel(t *testing.T) string {
	t.Helper()
	sentinel := t.TempDir()
	NewWithT(t).Expect(os.Mkdir(filepath.Join(sentinel, "tmp"), 0o755)).To(Succeed())
	t.Setenv("TMPDIR", filepath.Join(sentinel, "tmp"))
	return sentinel
}

// expectNothingEscaped checks, once a reconcile is over, that the sentinel still holds only the
// working directories' parent and that no file written from upstream content (escapedMarker)
// is left anywhere under it: not beside the working directories, not in one left behind. The
// test's own temporary directories (t.TempDir: "<TestName><random>"), where it extracts the
// artifacts it downloads, are not looked into. What escaped is removed once reported, so that
// the next case of a test is judged on its own.
func expectNothingEscaped(t *testing.T, sentinel string) {
	t.Helper()
	g := NewWithT(t)
	tmp := filepath.Join(sentinel, "tmp")
	top, err := os.ReadDir(sentinel)
	g.Expect(err).NotTo(HaveOccurred())
	var beside []string
	for _, e := range top {
		if e.Name() != "tmp" {
			beside = append(beside, e.Name())
		}
	}
	var found []string
	g.Expect(filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a working directory removed during the walk
				return nil
			}
			return err
		}
		if d.IsDir() && filepath.Dir(p) == tmp && strings.HasPrefix(d.Name(), "Test") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.HasPrefix(string(b), escapedMarker) {
			found = append(found, p)
		}
		return nil
	})).To(Succeed())
	for _, name := range beside {
		g.Expect(os.RemoveAll(filepath.Join(sentinel, name))).To(Succeed())
	}
	for _, p := range found {
		g.Expect(os.Remove(p)).To(Succeed())
	}
	g.Expect(beside).To(BeEmpty(), "written beside TMPDIR, outside every working directory")
	g.Expect(found).To(BeEmpty(), "upstream content left in TMPDIR, outside the working directories")
}

// artifactEntries downloads a stored artifact from its URL as is (no extraction, which would
// refuse what this looks for) and returns its tar entries: "name" for files and directories,
// "name -> target" for symbolic links, "name => target" for hard links.
func artifactEntries(t *testing.T, url string) []string {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	gz, err := gzip.NewReader(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	var entries []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		g.Expect(err).NotTo(HaveOccurred())
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			entries = append(entries, hdr.Name+" -> "+hdr.Linkname)
		case tar.TypeLink:
			entries = append(entries, hdr.Name+" => "+hdr.Linkname)
		default:
			entries = append(entries, hdr.Name)
		}
	}
}

// expectEntriesInside checks that every entry of a stored artifact lies inside its root: a
// relative name without "..", a symbolic link whose target, read from the link's directory,
// stays inside, a hard link to a name inside.
func expectEntriesInside(t *testing.T, url string) {
	t.Helper()
	inside := func(p string) bool { p = strings.TrimSuffix(p, "/"); return p == "." || filepath.IsLocal(p) }
	var outside []string
	for _, e := range artifactEntries(t, url) {
		if name, target, ok := strings.Cut(e, " -> "); ok {
			if !inside(name) || path.IsAbs(target) || !inside(path.Join(path.Dir(name), target)) {
				outside = append(outside, e)
			}
			continue
		}
		if name, target, ok := strings.Cut(e, " => "); ok {
			if !inside(name) || !inside(target) {
				outside = append(outside, e)
			}
			continue
		}
		if !inside(e) {
			outside = append(outside, e)
		}
	}
	NewWithT(t).Expect(outside).To(BeEmpty(), "artifact entries outside its root")
}

// tarEntry is a tar entry as a hostile publisher writes it: typ is tar.TypeReg (body is the
// content), tar.TypeSymlink or tar.TypeLink (body is the link's target).
type tarEntry struct {
	name, body string
	typ        byte
}

// tarGzipEntries archives entries in order and as given, unsafe names and links included.
func tarGzipEntries(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		} else {
			hdr.Linkname = e.body
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
