//go:build node

package node

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sluice-gitops/sluice/shared/testenv"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// failoverResume bounds how soon another replica reconciles after the elected one's pod is
// deleted.
const failoverResume = 15 * time.Second

// controllersFailover: deploy/default runs the gating-controller, the resourceset-controller
// and the manifest-generator with two replicas each. For each, the elected replica's pod is
// deleted and a change is made at once: the other replica (or the pod that replaces the deleted
// one) takes the Lease within failoverResume and handles the change (a new leader reconciles
// every object of its kinds first: the manifest-generator runs every generation of the earlier
// tests again). The ResourceSet's change is handled within failoverResume and applied once: its
// ConfigMap is modified once, to the new value, and never again.
func controllersFailover(ctx context.Context, t *testing.T, cluster *Cluster) {
	const ns = "failover-rs"
	applyObjects(ctx, t, cluster, accountObjects(ns)+resourceSetOf(ns, "1"))
	waitReady(ctx, t, cluster, ns, "resourceset/one")
	w, err := cluster.Node.Client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=one"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	for _, c := range []struct {
		controller, ns, object string
		// change makes the change the next leader must handle, and says how to see it handled.
		change func(value string) (jsonpath, want string)
	}{
		{"resourceset-controller", ns, "resourceset/one", func(value string) (string, string) {
			applyObjects(ctx, t, cluster, resourceSetOf(ns, value))
			return "{.status.observedGeneration}/{.metadata.generation}/{.status.conditions[?(@.type==\"Ready\")].status}", ""
		}},
		{"gating-controller", "sluice-system", "gate/frozen", nil},
		{"manifest-generator", "sluice-system", "manifestgeneration/app", nil},
	} {
		pods := waitControllerPods(ctx, t, cluster, c.controller, 2)
		lease, leader := leaseOf(ctx, t, cluster, pods)
		value := fmt.Sprint(time.Now().UnixNano())
		deleted := time.Now()
		kubectl(ctx, t, cluster, "-n", "sluice-system", "delete", "pod", leader, "--wait=false")
		var jsonpath, want string
		if c.change != nil {
			jsonpath, want = c.change(value)
		} else {
			kubectl(ctx, t, cluster, "-n", c.ns, "annotate", "--overwrite", c.object, "reconcile.fluxcd.io/requestedAt="+value)
			jsonpath, want = "{.status.lastHandledReconcileAt}", value
		}
		var tookOver time.Duration
		for {
			if tookOver == 0 {
				if l, err := cluster.Node.Client.CoordinationV1().Leases("sluice-system").Get(ctx, lease, metav1.GetOptions{}); err == nil &&
					l.Spec.HolderIdentity != nil && !strings.HasPrefix(*l.Spec.HolderIdentity, leader+"_") {
					tookOver = time.Since(deleted)
				}
			}
			out := kubectlMay(ctx, cluster, "-n", c.ns, "get", c.object, "-o", "jsonpath="+jsonpath)
			if want == "" {
				// observedGeneration/generation/Ready: the new generation handled and Ready.
				parts := strings.Split(out, "/")
				if len(parts) == 3 && parts[0] == parts[1] && parts[2] == "True" && tookOver > 0 {
					break
				}
			} else if out == want && tookOver > 0 {
				break
			}
			if time.Since(deleted) > 3*time.Minute {
				t.Fatalf("%s: %s not handled 3 minutes after the leader's pod was deleted (%s)\n%s", c.controller, c.object, out,
					describeNamespace(cluster, "sluice-system"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		handled := time.Since(deleted)
		t.Logf("%s: another replica took the Lease %s %v after %s's pod was deleted; the change was handled %v after",
			c.controller, lease, tookOver.Round(time.Millisecond), leader, handled.Round(time.Millisecond))
		if tookOver > failoverResume {
			t.Errorf("%s: the Lease was taken %v after the leader's pod was deleted, want at most %v", c.controller, tookOver, failoverResume)
		}
		if c.change != nil && handled > failoverResume {
			// The manifest-generator's and the gating-controller's new leader reconciles every
			// object first; the ResourceSet is the only one of its namespace's kind here.
			t.Errorf("%s: the change was handled %v after the leader's pod was deleted, want at most %v", c.controller, handled, failoverResume)
		}
	}

	// The ResourceSet's change reached its ConfigMap once, and nothing wrote it after.
	var modified []string
	for drain := time.After(3 * time.Second); ; {
		select {
		case e := <-w.ResultChan():
			if cm, ok := e.Object.(*corev1.ConfigMap); ok && e.Type == watch.Modified {
				modified = append(modified, cm.Data["value"])
			}
			continue
		case <-drain:
		}
		break
	}
	if len(modified) != 1 || modified[0] == "1" {
		t.Errorf("the ConfigMap's modifications after the failover: %q, want one to the new value", modified)
	}
}

// resourceSetOf is a ResourceSet one of ns that applies the ConfigMap one with value.
func resourceSetOf(ns, value string) string {
	return fmt.Sprintf(`---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: one, namespace: %[1]s}
spec:
  serviceAccountName: applier
  resources:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: one, namespace: %[1]s}, data: {value: %[2]q}}
`, ns, value)
}

// waitControllerPods waits until a controller has n pods, all Ready and none terminating, and
// returns their names. A pod still terminating (as one a rollout replaced, which served without
// a preStop sleep) may still be behind the Service for a moment after it stopped listening.
func waitControllerPods(ctx context.Context, t *testing.T, cluster *Cluster, controller string, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		list, err := cluster.Node.Client.CoreV1().Pods("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + controller})
		var ready []string
		if err == nil {
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready = append(ready, p.Name)
				}
			}
		}
		if len(ready) == n && len(list.Items) == n {
			return ready
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			t.Fatalf("%d of %d %s pods Ready:\n%s", len(ready), n, controller, describeNamespace(cluster, "sluice-system"))
		}
	}
}

// sharedStoreFailover: deploy/default with the shared-artifact-store component, as
// deploy/README.md has users write the overlay, on an S3 server
// (versitygw, on the host, relayed to the pods): two source-controller replicas, both Ready and
// behind the Service. A consumer downloads the artifact through the Service every 100 ms while
// the elected replica's pod is deleted: no download fails, and the other replica takes the Lease
// and handles a reconcile request made then, within failoverResume of the delete.
func sharedStoreFailover(ctx context.Context, t *testing.T, cluster *Cluster) {
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "stored")
	repo.Commit(t, "app", map[string]string{"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n"})
	gitURL := relayGitServer(t, cluster, srv)
	applySharedStore(ctx, t, cluster, "")
	waitDeploymentsReady(ctx, t, cluster, "sluice-system", []string{"source-controller"})
	pods := waitControllerPods(ctx, t, cluster, "source-controller", 2)
	applyObjects(ctx, t, cluster, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: failover, namespace: sluice-system}
spec:
  interval: 1m
  url: %s
  ref: {branch: %s}
`, gitURL(repo), repo.CurrentBranch(t)))
	kubectl(ctx, t, cluster, "-n", "sluice-system", "annotate", "--overwrite", "gitrepository/failover", "reconcile.fluxcd.io/requestedAt=stored")
	waitHandled(ctx, t, cluster, "gitrepository/failover", "stored", 2*time.Minute)
	lease, leader := leaseOf(ctx, t, cluster, pods)
	t.Logf("two replicas Ready on the object store; %s holds the Lease %s", leader, lease)

	consumer := startConsumer(ctx, t, cluster, failoverRepo)
	time.Sleep(5 * time.Second)
	if before := consumer.results(); len(before) < 20 || failures(before) > 0 {
		t.Fatalf("before the failover: %d downloads, %d failed (%s)\n%s", len(before), failures(before), summarize(before), describeEndpoints(cluster))
	}
	deleted := time.Now()
	kubectl(ctx, t, cluster, "-n", "sluice-system", "delete", "pod", leader, "--wait=false")
	// The deleted pod serves and reconciles on through its preStop sleep, then releases the
	// Lease as it stops: the other replica takes it, and handles a request made then.
	waitLeaseTaken(ctx, t, cluster, lease, leader, deleted)
	tookOver := time.Since(deleted)
	kubectl(ctx, t, cluster, "-n", "sluice-system", "annotate", "--overwrite", "gitrepository/failover", "reconcile.fluxcd.io/requestedAt=after-failover")
	waitHandled(ctx, t, cluster, "gitrepository/failover", "after-failover", 2*time.Minute)
	resumed := time.Since(deleted)
	// Downloads go on while the deleted pod terminates and its replacement starts.
	time.Sleep(10 * time.Second)
	consumer.stop()
	all := consumer.results()
	t.Logf("the other replica took the Lease %v after the leader's pod was deleted and handled a request made then %v after the delete; %d downloads, %d failed (%s)",
		tookOver.Round(time.Millisecond), resumed.Round(time.Millisecond), len(all), failures(all), summarize(all))
	if failures(all) > 0 {
		t.Errorf("%d of %d downloads failed across the failover: %s", failures(all), len(all), summarize(all))
	}
	if resumed > failoverResume {
		t.Errorf("reconciling resumed %v after the leader's pod was deleted, want at most %v", resumed, failoverResume)
	}
}

// waitHandled waits until a GitRepository of sluice-system handled the reconcile request value
// and is Ready.
func waitHandled(ctx context.Context, t *testing.T, cluster *Cluster, object, value string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		out := kubectlMay(ctx, cluster, "-n", "sluice-system", "get", object, "-o",
			`jsonpath={.status.lastHandledReconcileAt}/{.status.conditions[?(@.type=="Ready")].status}`)
		if out == value+"/True" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not handle %q within %v (%s)\n%s", object, value, timeout, out, describeNamespace(cluster, "sluice-system"))
		}
	}
}

// applySharedStore applies deploy/default with the shared-artifact-store component, as
// deploy/README.md has users write the overlay, and more of the overlay (extra), on a bucket of
// an S3 server (versitygw) of the host relayed to the pods.
func applySharedStore(ctx context.Context, t *testing.T, cluster *Cluster, extra string) {
	t.Helper()
	store := testserver.NewObjectStore(t)
	bucket := store.NewBucket(t)
	storeAddr, stop, err := cluster.RelayToPods(store.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := RenderOverlay(root, filepath.Join(root, "bin"), t.TempDir(), []string{"shared-artifact-store"}, fmt.Sprintf(`namespace: sluice-system
configMapGenerator:
  - name: source-controller-store
    literals: [endpoint=%s, bucket=%s, insecure=true]
`, storeAddr, bucket)+extra)
	if err != nil {
		t.Fatal(err)
	}
	applyObjects(ctx, t, cluster, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: source-controller-store, namespace: sluice-system}
stringData: {accesskey: %q, secretkey: %q}
`, store.AccessKey, store.SecretKey))
	// As deploy/default was applied, by the same field manager.
	kubectl(ctx, t, cluster, "apply", "--server-side", "--field-manager=sluice-e2e", "-f", rendered)
}
