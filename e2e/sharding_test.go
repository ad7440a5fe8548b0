package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Three source-controller processes with --sharding share 60 GitRepositories without a label
// placed by hand: every one is reconciled, by one replica each (the replica's own artifact
// server, in its URL, tells which), each replica taking a share; when one replica stops, the
// others take its objects over, and a reconcile requested of every object is handled by the
// two that remain.
func TestShardedSourceControllers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repos = 60
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sluice-system"}})
	if !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "sharded")
	repo.Commit(t, "Initial commit", map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n"})

	replicas := map[string]*harness.Controller{} // storage address: replica
	identity := map[string]string{}
	for i := range 3 {
		dir := t.TempDir()
		id := fmt.Sprintf("source-controller-%d", i)
		c, err := harness.StartReplica(binDir, "source-controller", id, kubeconfigIn(t, dir), dir,
			"--sharding", "--enable-leader-election=false")
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Stop(30 * time.Second) })
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		g.Expect(c.WaitReady(rctx)).To(Succeed())
		cancel()
		replicas[c.StorageAddr], identity[c.StorageAddr] = c, id
	}

	k8s := sourceClient(t)
	ns := env.Namespace(t)
	for n := range repos {
		g.Expect(k8s.Create(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", n)},
			Spec: sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Interval: metav1.Duration{Duration: time.Hour}}})).To(Succeed())
	}
	// writers lists, for each replica, the objects whose artifact it wrote, once all are ready
	// and have handled the request.
	writers := func(request string) map[string][]string {
		out := map[string][]string{}
		g.Eventually(func(g Gomega) {
			out = map[string][]string{}
			var list sourcev1.GitRepositoryList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(repos))
			for _, r := range list.Items {
				g.Expect(conditions.IsTrue(&r, meta.ReadyCondition)).To(BeTrue(), "%s: %v", r.Name, r.Status.Conditions)
				g.Expect(r.Status.Artifact).NotTo(BeNil())
				g.Expect(r.Status.LastHandledReconcileAt).To(Equal(request), r.Name)
				u, err := url.Parse(r.Status.Artifact.URL)
				g.Expect(err).NotTo(HaveOccurred())
				out[u.Host] = append(out[u.Host], r.Name)
			}
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		return out
	}
	first := writers("")
	for addr, names := range first {
		g.Expect(replicas).To(HaveKey(addr))
		t.Logf("replica %s wrote %d artifacts", identity[addr], len(names))
	}
	g.Expect(first).To(HaveLen(3), "every replica took a share")
	for _, names := range first {
		g.Expect(len(names)).To(BeNumerically("<=", repos/2), "no replica took more than half")
	}

	// One replica stops: the two others take its objects, and handle a request of every object.
	var gone string
	for addr := range first {
		gone = addr
		break
	}
	stopped := time.Now()
	g.Expect(replicas[gone].Stop(30 * time.Second)).To(Succeed())
	for n := range repos {
		obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", n)}}
		patch := []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"after-stop"}}}`)
		g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	}
	after := writers("after-stop")
	t.Logf("the stopped replica's objects were handled by the others %v after it stopped", time.Since(stopped).Round(100*time.Millisecond))
	g.Expect(after).NotTo(HaveKey(gone))
	for addr, names := range first {
		if addr == gone {
			continue
		}
		g.Expect(after[addr]).To(ContainElements(names), "a remaining replica keeps its objects")
	}
}
