package chart_test

import (
	"path/filepath"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
)

// Pulls of the same archive (URL, digest, credentials) share one download, at the same time or
// one after the other; other credentials, or no digest in the index, download again.
func TestDownloadsShareOneDownload(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	served := readFile(t, repo.AddChart(t, podinfo("6.0.3")))
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz", Digest: sha256Hex(served)}
	downloads := chart.NewDownloads(1 << 20)

	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			out := t.TempDir()
			res, err := downloads.Pull(t.Context(), ref, out, chart.Options{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*res).To(Equal(chart.Result{Name: "podinfo", Version: "6.0.3", Path: filepath.Join(out, "podinfo-6.0.3.tgz")}))
			g.Expect(readFile(t, res.Path)).To(Equal(served))
		})
	}
	wg.Wait()
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(1))

	// Values files repackage the shared download.
	res, err := downloads.Pull(t.Context(), ref, t.TempDir(), chart.Options{ValuesFiles: []string{"values.yaml"}, VersionMetadata: "7"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("6.0.3+7"))
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(1))

	other := ref
	other.Username, other.Password = "tenant-b", "secret"
	_, err = downloads.Pull(t.Context(), other, t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(2), "another tenant's credentials download for themselves")

	noDigest := ref
	noDigest.Digest = ""
	for range 2 {
		_, err = downloads.Pull(t.Context(), noDigest, t.TempDir(), chart.Options{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(4), "without a digest nothing names the content: no sharing")
}

// A failed download is not kept, and archives beyond the byte bound are let go.
func TestDownloadsKeepNoFailureAndStayBounded(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	served := readFile(t, repo.AddChart(t, podinfo("6.0.3")))
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz", Digest: sha256Hex(served)}

	bad := ref
	bad.Digest = sha256Hex([]byte("something else"))
	downloads := chart.NewDownloads(1 << 20)
	for range 2 {
		_, err := downloads.Pull(t.Context(), bad, t.TempDir(), chart.Options{})
		g.Expect(err).To(MatchError(chart.ErrChartPull))
	}
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(2), "a failure is retried, not remembered")

	small := chart.NewDownloads(int64(len(served)) - 1)
	for range 2 {
		_, err := small.Pull(t.Context(), ref, t.TempDir(), chart.Options{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(repo.Requests("/podinfo-6.0.3.tgz")).To(Equal(4), "an archive over the bound is not kept")
}
