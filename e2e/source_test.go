package e2e

import (
	"context"
	"net/http"
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

// The source-controller binary fetches a repository and serves the artifact; after a restart it
// serves the same artifact from disk, and traversal requests get nothing.
func TestSourceControllerServesArtifactsAcrossRestarts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := kubeconfigIn(t, dir)
	c := startController(t, "source-controller", kubeconfig, dir)

	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "app")
	sha := repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "kind: ConfigMap\n"})
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "source-e2e"}})).To(Succeed())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "source-e2e", "name": "app"},
		"spec":     map[string]any{"url": repo.HTTPURL(), "interval": "1h"},
	}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())

	stored := func() (map[string]any, bool) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		a, ok, _ := unstructured.NestedMap(obj.Object, "status", "artifact")
		return a, ok
	}
	g.Eventually(func() any { a, _ := stored(); return a["revision"] }, time.Minute).Should(Equal("master@sha1:" + sha))
	a, _ := stored()
	url, digest := a["url"].(string), a["digest"].(string)
	g.Expect(url).To(MatchRegexp(`^http://`+c.StorageAddr+`/[A-Za-z0-9_-]{22}/gitrepository/source-e2e/app/`), "signed")

	fetch := func() {
		out := filepath.Join(t.TempDir(), "x")
		g.Expect((&artifact.Fetcher{}).Fetch(ctx, url, digest, out)).To(Succeed())
		g.Expect(filepath.Join(out, "app.yaml")).To(BeAnExistingFile())
	}
	fetch()
	// The readiness gauge of Flux's dashboards.
	g.Eventually(func() string { return get(t, "http://"+c.MetricsAddr+"/metrics") }, 10*time.Second).Should(ContainSubstring(
		`gotk_reconcile_condition{kind="GitRepository",name="app",namespace="source-e2e",status="True",type="Ready"} 1`))
	for _, p := range []string{"/../kubeconfig", "/%2e%2e/kubeconfig", "/gitrepository/"} {
		resp, err := http.Get("http://" + c.StorageAddr + p)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(BeNumerically(">=", 400), p)
	}

	g.Expect(c.Stop(30 * time.Second)).To(Succeed())
	startController(t, "source-controller", kubeconfig, dir, "--storage-addr="+c.StorageAddr, "--storage-adv-addr="+c.StorageAddr)
	g.Eventually(func() error { _, err := http.Get(url); return err }, 10*time.Second).Should(Succeed())
	fetch()
}

// Two replicas with leader election: only the leader reconciles, both serve the artifacts of the
// shared volume.
func TestEveryReplicaServesArtifacts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := kubeconfigIn(t, dir)
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sluice-system"}}))).To(Succeed())
	leader := startController(t, "source-controller", kubeconfig, dir, "--enable-leader-election")
	g.Eventually(func() string { return get(t, "http://"+leader.MetricsAddr+"/metrics") }, time.Minute).
		Should(ContainSubstring("leader_election_master_status"))
	standby := startController(t, "source-controller", kubeconfig, t.TempDir(),
		"--enable-leader-election", "--storage-path="+filepath.Join(dir, "storage"))

	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "replicas")
	sha := repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "kind: ConfigMap\n"})
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "replicas"}})).To(Succeed())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "replicas", "name": "app"},
		"spec":     map[string]any{"url": repo.HTTPURL(), "interval": "1h"},
	}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	var url, digest string
	g.Eventually(func() string {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		url, _, _ = unstructured.NestedString(obj.Object, "status", "artifact", "url")
		digest, _, _ = unstructured.NestedString(obj.Object, "status", "artifact", "digest")
		rev, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
		return rev
	}, time.Minute).Should(Equal("master@sha1:" + sha))

	// The URL the leader signed, from the standby: the key generated into the shared volume is
	// the standby's too.
	out := filepath.Join(t.TempDir(), "x")
	g.Expect((&artifact.Fetcher{}).Fetch(ctx, strings.Replace(url, leader.StorageAddr, standby.StorageAddr, 1), digest, out)).To(Succeed())
	g.Expect(filepath.Join(out, "app.yaml")).To(BeAnExistingFile())
}
