package testserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestWriteLargeIndexLoads(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "index.yaml")
	f, err := os.Create(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testserver.WriteLargeIndex(f, 4, 12)).To(Succeed())
	g.Expect(f.Close()).To(Succeed())

	// LoadIndexFile drops entries that fail validation with only a log line: counting them all
	// proves every generated entry is valid.
	index, err := repo.LoadIndexFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(HaveLen(4))
	total := 0
	for name, versions := range index.Entries {
		total += len(versions)
		for _, cv := range versions {
			g.Expect(cv.Name).To(Equal(name))
			g.Expect(cv.Digest).To(HaveLen(64))
			g.Expect(cv.URLs).To(HaveLen(1))
			g.Expect(len(cv.Description)).To(BeNumerically(">=", 200))
			g.Expect(cv.Maintainers).To(HaveLen(1))
			g.Expect(cv.Annotations).To(HaveKey("artifacthub.io/changes"))
		}
	}
	g.Expect(total).To(Equal(4 * 12))
	cv, err := index.Get("chart-0003", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.Version).To(Equal("1.1.1"), "the newest of 12 versions")
	g.Expect(index.Entries["chart-0003"][11].Version).To(Equal("1.0.0"))

	// Deterministic: the same arguments give the same bytes.
	var a, b bytes.Buffer
	g.Expect(testserver.WriteLargeIndex(&a, 2, 3)).To(Succeed())
	g.Expect(testserver.WriteLargeIndex(&b, 2, 3)).To(Succeed())
	g.Expect(a.Bytes()).To(Equal(b.Bytes()))

	var empty bytes.Buffer
	g.Expect(testserver.WriteLargeIndex(&empty, 0, 0)).To(Succeed())
	emptyPath := filepath.Join(t.TempDir(), "index.yaml")
	g.Expect(os.WriteFile(emptyPath, empty.Bytes(), 0o644)).To(Succeed())
	index, err = repo.LoadIndexFile(emptyPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(BeEmpty())
}

// countingWriter counts bytes and keeps none.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

func TestWriteLargeIndexSize(t *testing.T) {
	g := NewWithT(t)
	var n countingWriter
	start := time.Now()
	g.Expect(testserver.WriteLargeIndex(&n, 300, 50)).To(Succeed())
	mib := float64(n) / (1 << 20)
	t.Logf("300 charts x 50 versions: %d bytes (%.1f MiB), %.0f bytes per version, written in %v",
		int64(n), mib, float64(n)/15000, time.Since(start).Round(time.Millisecond))
	g.Expect(mib).To(BeNumerically("~", 50, 5))
}
