package artifact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// Every archive here tries to write, or to leave a link, outside the target. The target is
// <parent>/target and <parent>/outside is a planted file, so the test can check that the parent
// still holds exactly those two and that the planted file was neither changed nor linked to.
func TestFetchRefusesEntriesThatEscapeTheTarget(t *testing.T) {
	for name, tc := range map[string]struct {
		entries func(parent string) []entry
		names   []string // quoted in the error
	}{
		"file climbing out": {
			entries: fixed(file("../x", "evil")),
			names:   []string{"'../x'"},
		},
		"file climbing out through a directory": {
			entries: fixed(file("a/../../x", "evil")),
			names:   []string{"'a/../../x'"},
		},
		"file overwriting the planted file": {
			entries: fixed(file("../outside", "evil")),
			names:   []string{"'../outside'"},
		},
		"absolute file": {
			entries: fixed(file("/etc/x", "evil")),
			names:   []string{"'/etc/x'"},
		},
		"absolute file into the parent": {
			entries: func(parent string) []entry { return []entry{file(filepath.Join(parent, "abs"), "evil")} },
			names:   []string{"is an absolute path"},
		},
		"directory climbing out": {
			entries: fixed(dir("../d/")),
			names:   []string{"'../d/'"},
		},
		"symlink to /": {
			entries: fixed(symlink("root", "/")),
			names:   []string{"'root'", "'/'"},
		},
		"symlink climbing out": {
			entries: fixed(symlink("up", "../..")),
			names:   []string{"'up'", "'../..'"},
		},
		"symlink climbing out of a subdirectory": {
			entries: fixed(dir("sub/"), symlink("sub/up", "../../outside")),
			names:   []string{"'sub/up'"},
		},
		"hard link climbing out": {
			entries: fixed(hardlink("h", "../outside")),
			names:   []string{"'h'", "'../outside'"},
		},
		"hard link to an absolute path": {
			entries: func(parent string) []entry {
				return []entry{hardlink("h", filepath.Join(parent, "outside"))}
			},
			names: []string{"'h'"},
		},
		"symlink chain resolving to the parent": {
			entries: fixed(symlink("a", "."), symlink("b", "a/..")),
			names:   []string{"'b'"},
		},
		"symlink chain resolving to the planted file": {
			entries: fixed(symlink("a", "."), symlink("b", "a/../outside")),
			names:   []string{"'b'"},
		},
		"symlink chain resolving outside to a path that does not exist yet": {
			entries: fixed(symlink("a", "."), symlink("b", "a/../later")),
			names:   []string{"'b'"},
		},
		"file written through a symlink chain": {
			entries: fixed(symlink("a", "."), symlink("d", "a/.."), file("d/evil", "evil")),
			names:   []string{"'d/evil'"},
		},
		"directory created through a symlink chain": {
			entries: fixed(symlink("a", "."), symlink("d", "a/.."), dir("d/evil/")),
			names:   []string{"'d/evil'"},
		},
		"file written over a dangling symlink leading out": {
			entries: fixed(symlink("a", "."), symlink("e", "a/../evil"), file("e", "evil")),
			names:   []string{"'e'"},
		},
		"planted file overwritten through a symlink chain": {
			entries: fixed(symlink("a", "."), symlink("e", "a/../outside"), file("e", "evil")),
			names:   []string{"'e'"},
		},
		"hard link through a symlink chain": {
			entries: fixed(symlink("a", "."), symlink("d", "a/.."), hardlink("h", "d/outside")),
			names:   []string{"'h'"},
		},
		"hard link to an in-tree symlink that leads out from the link's place": {
			// d1/d2/s -> ../x is d1/x, inside; a hard link to it is the same symlink at the top,
			// where ../x is outside.
			entries: fixed(dir("d1/d2/"), file("d1/x", "x"), symlink("d1/d2/s", "../x"), hardlink("top", "d1/d2/s")),
			names:   []string{"'top'"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			parent, target := newTarget(t)
			outside := filepath.Join(parent, "outside")
			g.Expect(os.WriteFile(outside, []byte("planted"), 0o644)).To(Succeed())
			data := buildTarGz(t, tc.entries(parent)...)
			s := serve(t, data, nil)

			err := (&Fetcher{}).Fetch(context.Background(), s.url(), sha256Of(data), target)

			g.Expect(errors.Is(err, ErrUnsafePath)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(s.url()))
			for _, n := range tc.names {
				g.Expect(err.Error()).To(ContainSubstring(n))
			}
			g.Expect(namesIn(t, parent)).To(ConsistOf("outside", "target"), "nothing is created next to the target")
			g.Expect(os.ReadFile(outside)).To(Equal([]byte("planted")))
			fi, err := os.Stat(outside)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.Sys().(*syscall.Stat_t).Nlink).To(BeEquivalentTo(1), "the planted file is not hard-linked")
			_, err = os.Lstat("/etc/x")
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "/etc/x")
		})
	}
}

func fixed(entries ...entry) func(string) []entry {
	return func(string) []entry { return entries }
}
