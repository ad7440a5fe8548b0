package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// An artifact URL is a capability: status.artifact.url downloads, its path without the signature
// does not, and a signature opens its own object only, not the same name in another namespace.
// Keys rotate through --artifact-url-keys-file, restart by restart: the status URLs are re-signed
// with the new first key, and the old URLs stop working only once the old key is removed.
func TestArtifactURLsAreCapabilities(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	const oldKey, newKey = "old-e2e-key-0123456789abcdef0123456789abcdef", "new-e2e-key-0123456789abcdef0123456789abcdef"
	keys := filepath.Join(dir, "url-keys")
	setKeys := func(k ...string) {
		g.Expect(os.WriteFile(keys, []byte(strings.Join(k, "\n")+"\n"), 0o600)).To(Succeed())
	}
	setKeys(oldKey)
	c := startController(t, "source-controller", kubeconfigIn(t, dir), dir, "--artifact-url-keys-file="+keys)

	server := testserver.NewGitServer(t, testserver.Options{})
	objects := map[string]*unstructured.Unstructured{}
	for _, ns := range []string{"capability-a", "capability-b"} {
		repo := server.NewRepo(t, ns)
		repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "kind: ConfigMap # " + ns + "\n"})
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"namespace": ns, "name": "app"},
			"spec":     map[string]any{"url": repo.HTTPURL(), "interval": "1h"},
		}}
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		objects[ns] = obj
	}
	artifactOf := func(ns string) (url, path, digest string) {
		obj := objects[ns]
		g.Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			digest, _, _ = unstructured.NestedString(obj.Object, "status", "artifact", "digest")
			return digest
		}, time.Minute).ShouldNot(BeEmpty())
		url, _, _ = unstructured.NestedString(obj.Object, "status", "artifact", "url")
		path, _, _ = unstructured.NestedString(obj.Object, "status", "artifact", "path")
		return url, path, digest
	}
	fetches := func(url, digest string) error {
		return (&artifact.Fetcher{Retries: 1}).Fetch(ctx, url, digest, filepath.Join(t.TempDir(), "x"))
	}
	status := func(url string) int {
		resp, err := http.Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}

	urlA, pathA, digestA := artifactOf("capability-a")
	urlB, pathB, digestB := artifactOf("capability-b")
	base := "http://" + c.StorageAddr + "/"
	g.Expect(pathA).To(HavePrefix("gitrepository/capability-a/app/"), "status.artifact.path is Flux's")
	g.Expect(urlA).To(MatchRegexp(`^` + base + `[A-Za-z0-9_-]{22}/` + pathA + `$`))
	g.Expect(fetches(urlA, digestA)).To(Succeed())
	g.Expect(fetches(urlB, digestB)).To(Succeed())
	sigA := strings.TrimSuffix(strings.TrimPrefix(urlA, base), "/"+pathA)
	g.Expect(status(base+pathA)).To(Equal(http.StatusNotFound), "unsigned")
	g.Expect(status(base+sigA+"/"+pathB)).To(Equal(http.StatusNotFound), "another namespace's artifact with a's signature")
	g.Expect(status(base + sigA + "/gitrepository/capability-b/app/latest.tar.gz")).To(Equal(http.StatusNotFound))
	g.Expect(status(strings.TrimSuffix(urlA, filepath.Base(pathA))+"latest.tar.gz")).To(Equal(http.StatusOK), "the object's own latest link")

	restart := func() {
		g.Expect(c.Stop(30 * time.Second)).To(Succeed())
		g.Expect(c.Restart()).To(Succeed())
		readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		g.Expect(c.WaitReady(readyCtx)).To(Succeed())
	}
	urlOf := func(ns string) func(g Gomega) string {
		return func(g Gomega) string {
			obj := objects[ns].DeepCopy()
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			u, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "url")
			return u
		}
	}

	// 1. The new key, second, only verifies.
	setKeys(oldKey, newKey)
	restart()
	g.Consistently(urlOf("capability-a"), 3*time.Second).Should(Equal(urlA))
	g.Expect(fetches(urlA, digestA)).To(Succeed())

	// 2. The new key, first, signs: every status is re-signed at its reconcile after the start,
	// and the old URLs still open.
	setKeys(newKey, oldKey)
	restart()
	g.Eventually(urlOf("capability-a"), time.Minute).ShouldNot(Equal(urlA))
	g.Eventually(urlOf("capability-b"), time.Minute).ShouldNot(Equal(urlB))
	newA := urlOf("capability-a")(g)
	g.Expect(newA).To(HaveSuffix("/" + pathA))
	g.Expect(fetches(newA, digestA)).To(Succeed())
	g.Expect(fetches(urlA, digestA)).To(Succeed())

	// 3. The old key is removed: its URLs are refused.
	setKeys(newKey)
	restart()
	g.Expect(fetches(newA, digestA)).To(Succeed())
	g.Expect(status(urlA)).To(Equal(http.StatusNotFound))
	g.Expect(status(urlB)).To(Equal(http.StatusNotFound))
}
