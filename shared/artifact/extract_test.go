package artifact

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFetchEnforcesTheExtractLimits(t *testing.T) {
	hundred := strings.Repeat("x", 100)
	for name, tc := range map[string]struct {
		entries []entry
		limits  Limits
		want    error  // nil: the archive is within the limits
		names   string // named in the error
	}{
		"size over the limit, second file": {
			entries: []entry{file("a", hundred), file("b/big", hundred)},
			limits:  Limits{MaxSize: 150},
			want:    ErrTooLarge,
			names:   "'b/big'",
		},
		"size over the limit, single file": {
			entries: []entry{file("huge", hundred)},
			limits:  Limits{MaxSize: 99},
			want:    ErrTooLarge,
			names:   "'huge'",
		},
		"size at the limit": {
			entries: []entry{file("a", hundred), file("b", hundred)},
			limits:  Limits{MaxSize: 200},
		},
		"more entries than allowed": {
			entries: []entry{dir("d/"), file("d/a", "a"), file("d/b", "b")},
			limits:  Limits{MaxFiles: 2},
			want:    ErrTooManyFiles,
			names:   "more than 2 entries",
		},
		"entries at the limit": {
			entries: []entry{dir("d/"), file("d/a", "a"), file("d/b", "b")},
			limits:  Limits{MaxFiles: 3},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			url, _, _, err := fetchArchive(t, buildTarGz(t, tc.entries...), tc.limits)
			if tc.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, tc.want)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(url))
			g.Expect(err.Error()).To(ContainSubstring(tc.names))
		})
	}
}

func TestFetchRefusesDevicesAndFIFOs(t *testing.T) {
	for name, typ := range map[string]byte{
		"character device": tar.TypeChar,
		"block device":     tar.TypeBlock,
		"FIFO":             tar.TypeFifo,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			data := buildTarGz(t, file("ok", "ok"), entry{name: "dev/special", typ: typ, mode: 0o600})

			url, _, target, err := fetchArchive(t, data, Limits{})

			g.Expect(errors.Is(err, ErrUnsupportedEntry)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(url))
			g.Expect(err.Error()).To(ContainSubstring("'dev/special' is a " + name))
			g.Expect(namesIn(t, target)).To(BeEmpty(), "a refused archive leaves nothing in the target")
		})
	}
}

func TestFetchRefusesAnArchiveThatIsNotAGzippedTarball(t *testing.T) {
	good := buildTarGz(t, file("a", strings.Repeat("a", 2048)), file("b", "b"))
	var truncatedTar bytes.Buffer
	tw := tar.NewWriter(&truncatedTar)
	_ = tw.WriteHeader(&tar.Header{Name: "short", Typeflag: tar.TypeReg, Size: 1000, Mode: 0o644})
	_, _ = tw.Write([]byte("only a few bytes"))
	// No Close: the body stops short of its declared size.

	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"plain text":         {[]byte("this is not an archive"), "not a gzip archive"},
		"empty":              {nil, "not a gzip archive"},
		"garbage in gzip":    {gzipBytes(t, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 256)), "not a valid tar archive"},
		"truncated gzip":     {good[:len(good)/2], ""},
		"tar body cut short": {gzipBytes(t, truncatedTar.Bytes()), "'short'"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var url string
			var err error
			g.Expect(func() { url, _, _, err = fetchArchive(t, tc.data, Limits{}) }).NotTo(Panic())
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(url))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

func TestFetchKeepsLinksThatStayInside(t *testing.T) {
	for name, tc := range map[string]struct {
		entries []entry
		link    string // reads "hello" after extraction, unless empty
	}{
		"dangling in-tree symlink": {
			entries: []entry{symlink("dangling", "missing/file")},
		},
		"symlink loop": {
			entries: []entry{symlink("l1", "l2"), symlink("l2", "l1")},
		},
		"chain climbing back to the top": {
			entries: []entry{file("dir/file", "hello"), symlink("d1/d2/a", "../.."), symlink("b", "d1/d2/a/dir/file")},
			link:    "b",
		},
		"hard link to a symlink in the same directory": {
			entries: []entry{file("dir/file", "hello"), symlink("s", "dir/file"), hardlink("h", "s")},
			link:    "h",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, parent, target, err := fetchArchive(t, buildTarGz(t, tc.entries...), Limits{})
			g.Expect(err).NotTo(HaveOccurred())
			if tc.link != "" {
				g.Expect(os.ReadFile(filepath.Join(target, tc.link))).To(Equal([]byte("hello")))
			}
			g.Expect(namesIn(t, parent)).To(ConsistOf("target"))
		})
	}
}
