package controller

import (
	"io/fs"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

// A mount replaces what the base has at its path, the directories leading to a mount exist,
// and the walk stays in lexical order.
func TestOverlayFS(t *testing.T) {
	g := NewWithT(t)
	base := fstest.MapFS{
		"a/x":   {Data: []byte("x")},
		"m/old": {Data: []byte("old")},
		"f":     {Data: []byte("f")},
		"b":     {Data: []byte("a file where a mount leads")},
	}
	o := overlayFS{base: base, mounts: map[string]fs.FS{
		"m":     fstest.MapFS{"new": {Data: []byte("new")}},
		"d/e":   fstest.MapFS{"y": {Data: []byte("y")}},
		"b/c/d": fstest.MapFS{"z": {Data: []byte("z")}},
	}}
	var walked []string
	g.Expect(fs.WalkDir(o, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			b, err := fs.ReadFile(o, p)
			if err != nil {
				return err
			}
			p += "=" + string(b)
		}
		walked = append(walked, p)
		return nil
	})).To(Succeed())
	g.Expect(walked).To(Equal([]string{
		".", "a", "a/x=x", "b", "b/c", "b/c/d", "b/c/d/z=z", "d", "d/e", "d/e/y=y", "f=f", "m", "m/new=new",
	}))
	fi, err := o.Stat("d")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.IsDir()).To(BeTrue())
	_, err = o.Stat("m/old")
	g.Expect(err).To(MatchError(fs.ErrNotExist))
}
