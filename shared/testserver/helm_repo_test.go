package testserver_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// helmGetters are Helm's HTTP(S) getters alone: getter.All would need CLI settings and
// plugins.
var helmGetters = getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}}

// downloadIndex downloads the repository's index with Helm's ChartRepository, as `helm repo
// add` and `helm repo update` do, and loads it.
func downloadIndex(t *testing.T, entry repo.Entry) (*repo.IndexFile, error) {
	t.Helper()
	entry.Name = "test"
	chartRepo, err := repo.NewChartRepository(&entry, helmGetters)
	if err != nil {
		return nil, err
	}
	chartRepo.CachePath = t.TempDir()
	path, err := chartRepo.DownloadIndexFile()
	if err != nil {
		return nil, err
	}
	return repo.LoadIndexFile(path)
}

// helmGet downloads url with Helm's HTTP getter.
func helmGet(url string, opts ...getter.Option) (*bytes.Buffer, error) {
	g, err := getter.NewHTTPGetter()
	if err != nil {
		return nil, err
	}
	return g.Get(url, append([]getter.Option{getter.WithURL(url)}, opts...)...)
}

func TestHelmRepositoryIndexAndChart(t *testing.T) {
	g := NewWithT(t)
	r := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0", AppVersion: "v1", Values: map[string]any{"replicas": 1}})
	archive := r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.1.0", AppVersion: "v2", Values: map[string]any{"replicas": 2, "image": map[string]any{"tag": "v2"}}})
	r.AddChart(t, testserver.ChartSpec{Name: "other", Version: "0.1.0"})
	g.Expect(archive).To(Equal(filepath.Join(r.Root(), "app-1.1.0.tgz")))

	index, err := downloadIndex(t, repo.Entry{URL: r.URL()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(HaveLen(2))
	g.Expect(index.Entries["app"]).To(HaveLen(2))
	// Sorted newest first, as `helm repo index` writes it.
	g.Expect(index.Entries["app"][0].Version).To(Equal("1.1.0"))
	g.Expect(index.Entries["app"][1].Version).To(Equal("1.0.0"))
	g.Expect(index.Entries["other"]).To(HaveLen(1))

	cv, err := index.Get("app", "1.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cv.AppVersion).To(Equal("v2"))
	g.Expect(cv.URLs).To(Equal([]string{r.URL() + "/app-1.1.0.tgz"}))
	data, err := os.ReadFile(archive)
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(data)
	g.Expect(cv.Digest).To(Equal(hex.EncodeToString(sum[:])))

	body, err := helmGet(cv.URLs[0])
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.LoadArchive(body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Name()).To(Equal("app"))
	g.Expect(ch.Metadata.Version).To(Equal("1.1.0"))
	g.Expect(ch.Metadata.APIVersion).To(Equal("v2"))
	g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 2)))
	g.Expect(ch.Values).To(HaveKeyWithValue("image", HaveKeyWithValue("tag", "v2")))

	g.Expect(r.Requests("/index.yaml")).To(Equal(1))
	g.Expect(r.Requests("app-1.1.0.tgz")).To(Equal(1))
	g.Expect(r.NotModified("/index.yaml")).To(Equal(0))

	_, err = helmGet(r.URL() + "/missing-1.0.0.tgz")
	g.Expect(err).To(MatchError(ContainSubstring("404")))
}

func TestHelmRepositoryBasicAuth(t *testing.T) {
	r := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{Username: "helm", Password: "s3cret"})
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})

	t.Run("the right credentials", func(t *testing.T) {
		g := NewWithT(t)
		index, err := downloadIndex(t, repo.Entry{URL: r.URL(), Username: "helm", Password: "s3cret"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(index.Has("app", "1.0.0")).To(BeTrue())
		body, err := helmGet(r.URL()+"/app-1.0.0.tgz", getter.WithBasicAuth("helm", "s3cret"))
		g.Expect(err).NotTo(HaveOccurred())
		_, err = loader.LoadArchive(body)
		g.Expect(err).NotTo(HaveOccurred())
	})
	t.Run("no credentials", func(t *testing.T) {
		g := NewWithT(t)
		_, err := downloadIndex(t, repo.Entry{URL: r.URL()})
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
		_, err = helmGet(r.URL() + "/app-1.0.0.tgz")
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
	})
	t.Run("a wrong password", func(t *testing.T) {
		g := NewWithT(t)
		_, err := downloadIndex(t, repo.Entry{URL: r.URL(), Username: "helm", Password: "wrong"})
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
	})
	t.Run("the challenge", func(t *testing.T) {
		g := NewWithT(t)
		resp, err := http.Get(r.URL() + "/index.yaml")
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		g.Expect(resp.Header.Get("WWW-Authenticate")).To(Equal(`Basic realm="helm"`))
	})
	// Refused requests count too: 1 + 2 + 1 GETs of the index above.
	NewWithT(t).Expect(r.Requests("/index.yaml")).To(Equal(4))
}

// get sends a GET with the given headers through the repository's plain client.
func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestHelmRepositoryConditionalGET(t *testing.T) {
	g := NewWithT(t)
	r := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	indexURL := r.URL() + "/index.yaml"

	resp, body := get(t, indexURL, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	sum := sha256.Sum256(body)
	etag := resp.Header.Get("ETag")
	g.Expect(etag).To(Equal(`"` + hex.EncodeToString(sum[:]) + `"`))
	lastModified := resp.Header.Get("Last-Modified")
	g.Expect(lastModified).NotTo(BeEmpty())

	resp, body = get(t, indexURL, map[string]string{"If-None-Match": etag})
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
	g.Expect(body).To(BeEmpty())
	g.Expect(resp.Header.Get("ETag")).To(Equal(etag))

	resp, _ = get(t, indexURL, map[string]string{"If-Modified-Since": lastModified})
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))

	// If-None-Match takes precedence over If-Modified-Since (RFC 9110): a stale ETag gets the
	// content even with a current date.
	resp, _ = get(t, indexURL, map[string]string{"If-None-Match": `"stale"`, "If-Modified-Since": lastModified})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	g.Expect(r.Requests("/index.yaml")).To(Equal(4))
	g.Expect(r.NotModified("/index.yaml")).To(Equal(2))

	// A change in the same second is still seen by both validators: the index's mtime is
	// moved to a later second, and the ETag follows the content.
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.1.0"})
	resp, body = get(t, indexURL, map[string]string{"If-None-Match": etag})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(string(body)).To(ContainSubstring("version: 1.1.0"))
	g.Expect(resp.Header.Get("ETag")).NotTo(Equal(etag))
	resp, _ = get(t, indexURL, map[string]string{"If-Modified-Since": lastModified})
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Last-Modified")).NotTo(Equal(lastModified))
	g.Expect(r.NotModified("/index.yaml")).To(Equal(2))

	// Charts are served the same way.
	resp, _ = get(t, r.URL()+"/app-1.0.0.tgz", nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	resp, _ = get(t, r.URL()+"/app-1.0.0.tgz", map[string]string{"If-None-Match": resp.Header.Get("ETag")})
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotModified))
	g.Expect(r.NotModified("/app-1.0.0.tgz")).To(Equal(1))
}

func TestHelmRepositoryTLS(t *testing.T) {
	r := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{TLS: true, Username: "helm", Password: "s3cret"})
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, r.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("with the CA", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(r.URL()).To(HavePrefix("https://127.0.0.1:"))
		index, err := downloadIndex(t, repo.Entry{URL: r.URL(), Username: "helm", Password: "s3cret", CAFile: caFile})
		g.Expect(err).NotTo(HaveOccurred())
		cv, err := index.Get("app", "1.0.0")
		g.Expect(err).NotTo(HaveOccurred())
		body, err := helmGet(cv.URLs[0], getter.WithBasicAuth("helm", "s3cret"), getter.WithTLSClientConfig("", "", caFile))
		g.Expect(err).NotTo(HaveOccurred())
		ch, err := loader.LoadArchive(body)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ch.Metadata.Version).To(Equal("1.0.0"))
	})
	t.Run("without the CA", func(t *testing.T) {
		g := NewWithT(t)
		_, err := downloadIndex(t, repo.Entry{URL: r.URL(), Username: "helm", Password: "s3cret"})
		g.Expect(err).To(MatchError(ContainSubstring("certificate")))
	})
}

func TestHelmRepositoryWriteIndex(t *testing.T) {
	g := NewWithT(t)
	r := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})

	// A new repository serves a valid empty index.
	index, err := downloadIndex(t, repo.Entry{URL: r.URL()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(BeEmpty())

	r.WriteIndex(t, []byte("entries: [this is not: an index"))
	_, body := get(t, r.URL()+"/index.yaml", nil)
	g.Expect(string(body)).To(Equal("entries: [this is not: an index"))
	_, err = downloadIndex(t, repo.Entry{URL: r.URL()})
	g.Expect(err).To(HaveOccurred())

	r.WriteIndexFrom(t, func(w io.Writer) error { return testserver.WriteLargeIndex(w, 3, 2) })
	index, err = downloadIndex(t, repo.Entry{URL: r.URL()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(HaveLen(3))

	// AddChart regenerates the index from the archives, replacing what was written.
	r.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	index, err = downloadIndex(t, repo.Entry{URL: r.URL()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(index.Entries).To(HaveLen(1))
	g.Expect(index.Has("app", "1.0.0")).To(BeTrue())

	// Only GET and HEAD are served.
	resp, err := http.Post(r.URL()+"/index.yaml", "text/plain", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
	resp, _ = get(t, r.URL()+"/../../etc/passwd", nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	resp, _ = get(t, fmt.Sprintf("%s/", r.URL()), nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
}
