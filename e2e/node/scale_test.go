//go:build node

package node

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// shardLabel is the label of each object's replica (shared/sharding).
const shardLabel = "sharding.sluice.dev/shard"

// TestScaleScenario is the scale scenario of the real node, run on demand (it takes the whole
// machine for about a quarter of an hour):
//
//	SLUICE_NODE_SCALE=1 go test -tags node -run TestScaleScenario -timeout 60m -v ./node/
//
// deploy/default with the shared artifact store and --sharding: three source-controller replicas
// and two of each other controller. 2,000 GitRepositories (SLUICE_NODE_SCALE_SOURCES) and
// ResourceSets of 5,000 ConfigMaps in all (SLUICE_NODE_SCALE_OBJECTS, 500 per ResourceSet) go to
// Ready. While a consumer downloads artifacts through the Service, one source-controller pod is
// killed (its Deployment starts another: a replica leaves, one joins), then a fourth replica is
// added; then a resourceset-controller pod is killed. Each step measures the time until the
// last object changed hands, how many moved, and the downloads that failed; it fails on a failed
// download, an object left on a gone replica, or more objects moved than the change calls for.
func TestScaleScenario(t *testing.T) {
	if os.Getenv("SLUICE_NODE_SCALE") == "" {
		t.Skip("the scale scenario runs on demand: SLUICE_NODE_SCALE=1 go test -tags node -run TestScaleScenario -timeout 60m -v ./node/")
	}
	sources := envCount(t, "SLUICE_NODE_SCALE_SOURCES", 2000)
	objects := envCount(t, "SLUICE_NODE_SCALE_OBJECTS", 5000)
	withDeployDefault(t, deployOptions{Timeout: 50 * time.Minute}, func(ctx context.Context, cluster *Cluster) {
		scaleScenario(ctx, t, cluster, sources, objects)
	})
}

func envCount(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

var (
	gitRepositoryKind = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	resourceSetKind   = schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "ResourceSet"}
)

func scaleScenario(ctx context.Context, t *testing.T, cluster *Cluster, sources, objects int) {
	const ns = "scale"
	var patches strings.Builder
	patches.WriteString("patches:\n")
	for c, replicas := range map[string]int{"source-controller": 3, "resourceset-controller": 2, "manifest-generator": 2, "gating-controller": 2} {
		fmt.Fprintf(&patches, `  - target: {kind: Deployment, name: %s}
    patch: |-
      - {op: replace, path: /spec/replicas, value: %d}
      - {op: add, path: /spec/template/spec/containers/0/args/-, value: --sharding}
`, c, replicas)
	}
	applySharedStore(ctx, t, cluster, patches.String())
	waitDeploymentsReady(ctx, t, cluster, "sluice-system", images.Controllers)
	waitControllerPods(ctx, t, cluster, "source-controller", 3)
	waitControllerPods(ctx, t, cluster, "resourceset-controller", 2)

	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "scale")
	repo.Commit(t, "app", map[string]string{"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n"})
	gitURL := relayGitServer(t, cluster, srv)
	applyObjects(ctx, t, cluster, accountObjects(ns))

	// The sources, created by 16 clients at once, to Ready on three shards.
	start := time.Now()
	createConcurrently(ctx, t, cluster, sources, func(i int) string {
		return fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo-%d, namespace: %s}
spec: {interval: 1h, url: %q, ref: {branch: %s}}
`, i, ns, gitURL(repo), repo.CurrentBranch(t))
	})
	owners := waitShardsReady(ctx, t, cluster, gitRepositoryKind, ns, sources, 15*time.Minute)
	t.Logf("SCALE %d GitRepositories Ready %v after the first was created, on %d replicas: %s",
		sources, time.Since(start).Round(100*time.Millisecond), len(countByShard(owners)), shardCounts(owners))

	// The ResourceSets, 500 ConfigMaps each, on two shards.
	start = time.Now()
	sets := (objects + 499) / 500
	createConcurrently(ctx, t, cluster, sets, func(i int) string { return scaleResourceSet(ns, i, 100) })
	rsOwners := waitShardsReady(ctx, t, cluster, resourceSetKind, ns, sets, 15*time.Minute)
	t.Logf("SCALE %d ResourceSets (%d ConfigMaps) Ready %v after the first was created, on %d replicas: %s",
		sets, sets*500, time.Since(start).Round(100*time.Millisecond), len(countByShard(rsOwners)), shardCounts(rsOwners))

	var sample []client.ObjectKey
	for i := 0; i < sources; i += max(1, sources/50) {
		sample = append(sample, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("repo-%d", i)})
	}
	consumer := startConsumer(ctx, t, cluster, sample...)

	// A source-controller replica killed: its objects move to the others, then the replacement
	// pod joins and takes its share.
	pods := waitControllerPods(ctx, t, cluster, "source-controller", 3)
	victim := pods[0]
	killed := time.Now()
	kubectl(ctx, t, cluster, "-n", "sluice-system", "delete", "pod", victim, "--wait=false")
	after, took := waitRebalanced(ctx, t, cluster, gitRepositoryKind, ns, sources, "source-controller", 3, killed, victim)
	moved := movedBetween(owners, after)
	t.Logf("SCALE source-controller pod %s killed: rebalanced %v after (the last object changed hands), %d of %d objects moved (%d were on the killed replica): %s",
		victim, took.Round(100*time.Millisecond), moved, sources, countByShard(owners)[victim], shardCounts(after))
	// What was on the killed replica moves, and the replacement's share moves to it: at most
	// twice a replica's share, with the bound's slack.
	if limit := 2 * sources * 5 / (3 * 4); moved > limit {
		t.Errorf("%d objects moved on a replica's replacement, want at most %d", moved, limit)
	}

	// A fourth replica: about a quarter of the objects move to it, and only to it.
	kubectl(ctx, t, cluster, "-n", "sluice-system", "scale", "deployment/source-controller", "--replicas=4")
	added := time.Now()
	final, took := waitRebalanced(ctx, t, cluster, gitRepositoryKind, ns, sources, "source-controller", 4, added, "")
	moved = movedBetween(after, final)
	newcomer := ""
	for shard := range countByShard(final) {
		if countByShard(after)[shard] == 0 {
			newcomer = shard
		}
	}
	t.Logf("SCALE a fourth source-controller replica %s: rebalanced %v after the scale, %d of %d objects moved: %s",
		newcomer, took.Round(100*time.Millisecond), moved, sources, shardCounts(final))
	for name, owner := range final {
		if after[name] != owner && owner != newcomer {
			t.Errorf("%s moved from %s to %s, not to the new replica", name, after[name], owner)
		}
	}
	if moved > sources*5/(4*4) {
		t.Errorf("%d objects moved to the fourth replica, want about %d (at most %d)", moved, sources/4, sources*5/(4*4))
	}

	// A resourceset-controller replica killed: its ResourceSets move and are applied again (a
	// no-op) by the other.
	rsPods := waitControllerPods(ctx, t, cluster, "resourceset-controller", 2)
	killed = time.Now()
	kubectl(ctx, t, cluster, "-n", "sluice-system", "delete", "pod", rsPods[0], "--wait=false")
	rsAfter, took := waitRebalanced(ctx, t, cluster, resourceSetKind, ns, sets, "resourceset-controller", 2, killed, rsPods[0])
	t.Logf("SCALE resourceset-controller pod %s killed: rebalanced %v after, %d of %d ResourceSets moved: %s",
		rsPods[0], took.Round(100*time.Millisecond), movedBetween(rsOwners, rsAfter), sets, shardCounts(rsAfter))

	consumer.stop()
	all := consumer.results()
	t.Logf("SCALE downloads of %d artifacts through the Service during the moves: %d, %d failed (%s)", len(sample), len(all), failures(all), summarize(all))
	if failures(all) > 0 {
		t.Errorf("%d of %d downloads failed while the objects moved: %s", failures(all), len(all), summarize(all))
	}
}

// scaleResourceSet is the ResourceSet set-<i> of ns: inputs × 5 ConfigMaps.
func scaleResourceSet(ns string, i, inputs int) string {
	var in strings.Builder
	for k := range inputs {
		fmt.Fprintf(&in, "    - idx: \"%d\"\n", k)
	}
	var res strings.Builder
	for k := range 5 {
		fmt.Fprintf(&res, "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: set-%d-<< inputs.idx >>-%d, namespace: %s}, data: {idx: << inputs.idx | quote >>}}\n", i, k, ns)
	}
	return fmt.Sprintf(`apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: set-%d, namespace: %s}
spec:
  serviceAccountName: applier
  inputs:
%s  resources:
%s`, i, ns, in.String(), res.String())
}

// createConcurrently creates n objects, manifest(i) each, with 16 clients at once.
func createConcurrently(ctx context.Context, t *testing.T, cluster *Cluster, n int, manifest func(i int) string) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(manifest(i)), &obj.Object); err != nil {
					errs <- err
					return
				}
				if err := cluster.Env.Client.Create(ctx, obj); err != nil {
					errs <- fmt.Errorf("creating %s: %w", obj.GetName(), err)
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// shards lists the objects of a kind in ns: name → shard label, and how many are Ready at their
// generation.
func shards(ctx context.Context, t *testing.T, cluster *Cluster, kind schema.GroupVersionKind, ns string) (map[string]string, int) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := cluster.Env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	ready := 0
	for _, o := range list.Items {
		owners[o.GetName()] = o.GetLabels()[shardLabel]
		observed, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" && observed == o.GetGeneration() {
				ready++
			}
		}
	}
	return owners, ready
}

// waitShardsReady waits until n objects of a kind in ns are Ready, and returns their shards.
func waitShardsReady(ctx context.Context, t *testing.T, cluster *Cluster, kind schema.GroupVersionKind, ns string, n int, timeout time.Duration) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(2 * time.Second) {
		owners, ready := shards(ctx, t, cluster, kind, ns)
		if ready == n {
			return owners
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d %ss Ready after %v (%s)\n%s", ready, n, kind.Kind, timeout, shardCounts(owners), describeNamespace(cluster, "sluice-system"))
		}
	}
}

// waitRebalanced waits until the n objects of a kind in ns are Ready, each on one of the
// controller's `replicas` live pods, none on gone, and every live pod holds some: then until no
// label changed for 10 seconds. It returns the shards and how long after since the last object
// changed hands.
func waitRebalanced(ctx context.Context, t *testing.T, cluster *Cluster, kind schema.GroupVersionKind, ns string, n int,
	controller string, replicas int, since time.Time, gone string) (map[string]string, time.Duration) {
	t.Helper()
	var last map[string]string
	lastChange := since
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(time.Second) {
		owners, ready := shards(ctx, t, cluster, kind, ns)
		if last != nil && movedBetween(last, owners) > 0 {
			lastChange = time.Now()
		}
		last = owners
		live := livePods(ctx, t, cluster, controller)
		settled := ready == n && len(live) == replicas && len(countByShard(owners)) == replicas
		for _, shard := range owners {
			if shard == gone || !live[shard] {
				settled = false
			}
		}
		if settled && time.Since(lastChange) > 10*time.Second {
			return owners, lastChange.Sub(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%ss not rebalanced over %d replicas 10 minutes after the change: %d of %d Ready (%s)\n%s",
				kind.Kind, replicas, ready, n, shardCounts(owners), describeNamespace(cluster, "sluice-system"))
		}
	}
}

// livePods are the controller's pods that are Ready and not terminating.
func livePods(ctx context.Context, t *testing.T, cluster *Cluster, controller string) map[string]bool {
	t.Helper()
	pods, err := cluster.Node.Client.CoreV1().Pods("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + controller})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				live[p.Name] = true
			}
		}
	}
	return live
}

func countByShard(owners map[string]string) map[string]int {
	out := map[string]int{}
	for _, shard := range owners {
		out[shard]++
	}
	return out
}

// shardCounts says how many objects each shard holds, in the order of the shards' names.
func shardCounts(owners map[string]string) string {
	counts := countByShard(owners)
	var names []string
	for s := range counts {
		names = append(names, s)
	}
	sort.Strings(names)
	var parts []string
	for _, s := range names {
		label := s
		if label == "" {
			label = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s=%d", label, counts[s]))
	}
	return strings.Join(parts, " ")
}

// movedBetween counts the objects whose shard differs between two listings.
func movedBetween(before, after map[string]string) int {
	n := 0
	for name, shard := range after {
		if before[name] != shard {
			n++
		}
	}
	return n
}
