package images_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/e2e/images"
)

// Building again over the archives of a build writes nothing when nothing changed; when one
// binary changed, only that image is written again, and only its binary's layer differs.
func TestBuildWritesOnlyChangedImages(t *testing.T) {
	g := NewWithT(t)
	out := t.TempDir()
	for _, c := range images.Controllers {
		// Links to the archives of TestMain's build: Build replaces an archive by renaming a new
		// one over it, so theirs stay as they are.
		g.Expect(os.Link(images.Archive(archives, c), images.Archive(out, c))).To(Succeed())
	}
	again, err := images.Build(images.Options{Bin: filepath.Join(root, "bin"), Out: out})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(HaveLen(len(results)))
	for i, r := range again {
		g.Expect(r.Written).To(BeFalse(), r.Controller)
		g.Expect(r.Digest).To(Equal(results[i].Digest), r.Controller)
	}

	// Another static binary as the gating-controller's.
	bin := t.TempDir()
	g.Expect(os.Symlink(filepath.Join(root, "bin", "source-controller"), filepath.Join(bin, "gating-controller"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Join(root, "bin", "kubectl-gate"), filepath.Join(bin, "kubectl-gate"))).To(Succeed())
	changed, err := images.Build(images.Options{Bin: bin, Out: out, Controllers: []string{"gating-controller"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(HaveLen(1))
	g.Expect(changed[0].Written).To(BeTrue())

	before, err := readImage(t, "gating-controller").Layers()
	g.Expect(err).NotTo(HaveOccurred())
	tag, err := name.NewTag(images.Ref("gating-controller"))
	g.Expect(err).NotTo(HaveOccurred())
	img, err := tarball.ImageFromPath(images.Archive(out, "gating-controller"), &tag)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.Digest()).To(Equal(changed[0].Digest))
	after, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(HaveLen(len(before)))
	last := len(after) - 1
	for i := range after {
		b, err1 := before[i].Digest()
		a, err2 := after[i].Digest()
		g.Expect(err1).NotTo(HaveOccurred())
		g.Expect(err2).NotTo(HaveOccurred())
		if i < last {
			g.Expect(a).To(Equal(b), "layer %d", i)
		} else {
			g.Expect(a).NotTo(Equal(b), "the binary's layer")
		}
	}
	fs := squash(t, img)
	g.Expect(fs.sums["/usr/local/bin/gating-controller"]).To(Equal(fileSum(t, filepath.Join(root, "bin", "source-controller"))))
}
