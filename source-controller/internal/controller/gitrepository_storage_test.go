package controller

import (
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A stored artifact that was damaged on disk is rebuilt at the next reconcile, with a Warning
// event; latest.tar.gz always serves the current artifact.
func TestGitRepositoryRebuildsACorruptArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "corrupt")
	sha := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	key := createRepo(t, ns, "corrupt", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + sha))
	art := getRepo(g, key).Status.Artifact

	latest := strings.TrimSuffix(art.URL, path.Base(art.URL)) + "latest.tar.gz"
	g.Expect(download(t, latest).String()).To(Equal(art.Digest))

	g.Expect(os.WriteFile(store.LocalPath(*art), []byte("garbage"), 0o644)).To(Succeed())
	poke(t, key)
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix(
		"Warning StatOperationFailed: stored artifact of revision 'master@sha1:" + sha + "' is missing or corrupt, rebuilding it")))
	g.Eventually(func() string { return download(t, art.URL).String() }, timeout).Should(Equal(art.Digest))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("1"))
}

func download(t *testing.T, url string) digest.Digest {
	t.Helper()
	resp, err := http.Get(url)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return digest.SHA256.FromBytes(b)
}
