package storage

import (
	"archive/tar"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"

	"github.com/sluice-gitops/sluice/shared/artifact"
)

var sampleTree = map[string]string{
	"README.md":               "# app\n",
	"deploy/":                 "",
	"deploy/app.yaml":         "kind: Deployment\n",
	"deploy/base/kustom.yaml": "resources: []\n",
	"empty/":                  "",
	"z/last.txt":              "last\n",
	"a/first.txt":             "first\n",
	"bin/run.sh":              "#!/bin/sh\necho hi\n",
	strings.Repeat("long-directory-name/", 8) + "file-with-a-long-name.yaml": "long: true\n",
}

// copyTreeReversed creates the files of sampleTree under dir in reverse order with other mtimes
// and permission bits, none of which may change the artifact.
func writeTreeVariant(t *testing.T, dir string) {
	names := make([]string, 0, len(sampleTree))
	for n := range sampleTree {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Reverse(names)
	for i, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sampleTree[n]), 0o600); err != nil {
			t.Fatal(err)
		}
		age(t, p, time.Duration(i+1)*time.Hour)
	}
	age(t, filepath.Join(dir, "deploy"), 48*time.Hour)
}

func makeExecutable(t *testing.T, dir string, mode os.FileMode) {
	if err := os.Chmod(filepath.Join(dir, "bin", "run.sh"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestArchiveReproducible(t *testing.T) {
	for _, alg := range []digest.Algorithm{digest.SHA256, digest.SHA384, digest.SHA512} {
		t.Run(string(alg), func(t *testing.T) {
			g := NewWithT(t)
			s := newTestStorage(t, Options{DigestAlgorithm: alg})

			dirA := t.TempDir()
			writeTree(t, dirA, sampleTree)
			makeExecutable(t, dirA, 0o755)
			a := s.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:abc", "abc.tar.gz")
			g.Expect(s.Archive(&a, dirA, nil)).To(Succeed())

			// Same tree, created in another order, with other mtimes, permissions and owners.
			dirB := t.TempDir()
			writeTreeVariant(t, dirB)
			makeExecutable(t, dirB, 0o700)
			if os.Geteuid() == 0 {
				g.Expect(os.Lchown(filepath.Join(dirB, "README.md"), 1234, 5678)).To(Succeed())
			}
			b := s.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:abc", "abc-b.tar.gz")
			g.Expect(s.Archive(&b, dirB, nil)).To(Succeed())
			g.Expect(b.Digest).To(Equal(a.Digest))

			// The first tree again after touching every mtime: same bytes.
			g.Expect(filepath.WalkDir(dirA, func(p string, _ os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				now := time.Now()
				return os.Chtimes(p, now, now)
			})).To(Succeed())
			c := s.NewArtifactFor("GitRepository", testObject("app"), "main@sha1:abc", "abc-c.tar.gz")
			g.Expect(s.Archive(&c, dirA, nil)).To(Succeed())
			g.Expect(c.Digest).To(Equal(a.Digest))
			g.Expect(*c.Size).To(Equal(*a.Size))

			// Digest, size and time are those of the file, in the consumer's terms.
			d, err := artifact.ParseDigest(a.Digest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Algorithm()).To(Equal(alg))
			data, err := os.ReadFile(s.LocalPath(a))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Algorithm().FromBytes(data)).To(Equal(d))
			v := d.Verifier()
			_, _ = v.Write(data)
			g.Expect(v.Verified()).To(BeTrue())
			g.Expect(*a.Size).To(Equal(int64(len(data))))
			g.Expect(a.LastUpdateTime.Time).To(BeTemporally("~", time.Now(), time.Minute))
			g.Expect(a.URL).To(MatchRegexp(`^http://source-controller\.flux-system\.svc\.cluster\.local\./[A-Za-z0-9_-]{22}/gitrepository/default/app/abc\.tar\.gz$`))
		})
	}
}

func TestArchiveContentAndHeaders(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	makeExecutable(t, dir, 0o744)
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, dir, nil)).To(Succeed())

	entries := readArchive(t, s.LocalPath(a))
	var names []string
	for _, e := range entries {
		h := e.hdr
		names = append(names, h.Name)
		g.Expect(h.ModTime.Unix()).To(BeZero(), h.Name)
		g.Expect(h.AccessTime.IsZero()).To(BeTrue(), h.Name)
		g.Expect(h.ChangeTime.IsZero()).To(BeTrue(), h.Name)
		g.Expect(h.Uid).To(BeZero())
		g.Expect(h.Gid).To(BeZero())
		g.Expect(h.Uname).To(BeEmpty())
		g.Expect(h.Gname).To(BeEmpty())
		g.Expect(h.Name).NotTo(HavePrefix("/"))
		switch {
		case h.Typeflag == tar.TypeDir:
			g.Expect(h.Mode).To(Equal(int64(0o755)), h.Name)
			g.Expect(h.Name).To(HaveSuffix("/"))
		case h.Name == "bin/run.sh":
			g.Expect(h.Mode).To(Equal(int64(0o755)), "any exec bit makes 0755")
		default:
			g.Expect(h.Typeflag).To(Equal(byte(tar.TypeReg)))
			g.Expect(h.Mode).To(Equal(int64(0o644)), h.Name)
		}
	}
	// Lexical walk order, directories before their content.
	g.Expect(names[:6]).To(Equal([]string{"README.md", "a/", "a/first.txt", "bin/", "bin/run.sh", "deploy/"}))
	g.Expect(names).To(ContainElement("empty/"))

	want := map[string]string{}
	for n, c := range sampleTree {
		if !strings.HasSuffix(n, "/") {
			want[n] = c
		}
	}
	g.Expect(archivedFiles(t, s, a)).To(Equal(want))
	g.Expect(extractArtifact(t, s, a)).To(Equal(want))
}

func TestArchiveSkipsLinksAndSpecialFiles(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"real.yaml": "a: 1\n", "sub/x.yaml": "x: 1\n"})
	outside := filepath.Join(t.TempDir(), "secret")
	g.Expect(os.WriteFile(outside, []byte("secret"), 0o644)).To(Succeed())
	g.Expect(os.Symlink("real.yaml", filepath.Join(dir, "link.yaml"))).To(Succeed())
	g.Expect(os.Symlink(outside, filepath.Join(dir, "outside"))).To(Succeed())
	g.Expect(os.Symlink("sub", filepath.Join(dir, "sublink"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Dir(outside), filepath.Join(dir, "outdir"))).To(Succeed())
	g.Expect(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)).To(Succeed())
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Logf("no device file in this test (mknod: %v)", err)
	}

	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, dir, nil)).To(Succeed())
	var names []string
	for _, e := range readArchive(t, s.LocalPath(a)) {
		names = append(names, e.hdr.Name)
		g.Expect(e.hdr.Typeflag).To(BeElementOf(byte(tar.TypeReg), byte(tar.TypeDir)))
	}
	g.Expect(names).To(Equal([]string{"real.yaml", "sub/", "sub/x.yaml"}))
}

func TestArchiveSymlinkedRoot(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.yaml": "a", ".flux.yaml": "f", ".git/HEAD": "h"})
	link := filepath.Join(t.TempDir(), "checkout")
	g.Expect(os.Symlink(dir, link)).To(Succeed())
	filter, err := IgnoreFilter(link, nil)
	g.Expect(err).NotTo(HaveOccurred())
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, link, filter)).To(Succeed())
	g.Expect(archivedFiles(t, s, a)).To(Equal(map[string]string{"a.yaml": "a", ".flux.yaml": "f"}))
}

func TestArchiveFilter(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"keep/a.yaml": "a", "drop/b.yaml": "b", "keep/drop.txt": "c"})
	var seen []string
	filter := func(p string, d os.DirEntry) bool {
		seen = append(seen, p)
		return p == "drop" || strings.HasSuffix(p, ".txt")
	}
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, dir, filter)).To(Succeed())
	g.Expect(archivedFiles(t, s, a)).To(Equal(map[string]string{"keep/a.yaml": "a"}))
	// Relative, slash-separated paths; an excluded directory is not walked.
	g.Expect(seen).To(Equal([]string{"drop", "keep", "keep/a.yaml", "keep/drop.txt"}))
}

func TestArchiveMaxSize(t *testing.T) {
	dir := t.TempDir()
	// Incompressible content, so the archive is about as large as the files.
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i*7919 + i>>8*31 + i>>3)
	}
	writeTree(t, dir, map[string]string{"big.bin": string(digest.SHA512.FromBytes(data)) + string(data)})

	tests := []struct {
		name    string
		maxSize int64
		wantErr bool
		limit   string // as the error writes it
	}{
		{name: "no limit", maxSize: 0},
		{name: "large enough", maxSize: 10 << 20},
		{name: "too small", maxSize: 1024, wantErr: true, limit: "1 KiB"},
		{name: "smaller than the gzip trailer", maxSize: 10, wantErr: true, limit: "10 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestStorage(t, Options{MaxSize: tt.maxSize})
			a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
			err := s.Archive(&a, dir, nil)
			if !tt.wantErr {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.ArtifactExist(a)).To(BeTrue())
				return
			}
			g.Expect(errors.Is(err, ErrArtifactTooLarge)).To(BeTrue(), "%v", err)
			// The limit and how far the artifact got: writing stops there.
			g.Expect(err.Error()).To(Equal(fmt.Sprintf("artifact is more than %[1]s, over --artifact-max-size (%[1]s)", tt.limit)))
			g.Expect(a.Digest).To(BeEmpty())
			g.Expect(s.ArtifactExist(a)).To(BeFalse())
			left, err := os.ReadDir(filepath.Dir(s.LocalPath(a)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(left).To(BeEmpty(), "no temporary file left behind")
		})
	}
}

func TestArchiveErrors(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.Archive(&a, filepath.Join(t.TempDir(), "missing"), nil)).NotTo(Succeed())
	file := filepath.Join(t.TempDir(), "file")
	g.Expect(os.WriteFile(file, nil, 0o644)).To(Succeed())
	g.Expect(s.Archive(&a, file, nil)).To(MatchError(ContainSubstring("not a directory")))
	empty := meta.Artifact{}
	g.Expect(s.Archive(&empty, t.TempDir(), nil)).To(MatchError(ContainSubstring("invalid artifact path")))
	g.Expect(s.ArtifactExist(a)).To(BeFalse())
}

func TestCopy(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{DigestAlgorithm: digest.SHA384, MaxSize: 100})
	a := s.NewArtifactFor("OCIRepository", testObject("app"), "v1", "v1.tar.gz")
	g.Expect(s.Copy(&a, strings.NewReader("hello"))).To(Succeed())
	g.Expect(a.Digest).To(Equal(digest.SHA384.FromString("hello").String()))
	g.Expect(*a.Size).To(Equal(int64(5)))
	g.Expect(s.Verify(a)).To(Succeed())

	b := s.NewArtifactFor("OCIRepository", testObject("app"), "v2", "v2.tar.gz")
	err := s.Copy(&b, strings.NewReader(strings.Repeat("x", 101)))
	g.Expect(errors.Is(err, ErrArtifactTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(s.ArtifactExist(b)).To(BeFalse())
}
