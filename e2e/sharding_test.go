package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Three source-controller processes with --sharding share 60 GitRepositories without a label
// placed by hand: every one is reconciled by one replica (the replica's own artifact server, in
// its URL, tells which, and so does the shard label `kubectl get -o wide` shows), each taking a
// share within the bound. A fourth replica joins and takes about a quarter; one of the first
// leaves and the others take its objects, and only its. Reconcile requests flow all along, and
// a watch on the objects records which replica wrote each status (the replicas write as
// source-controller@<identity>): no object is ever written by its old owner after its new one,
// which two replicas reconciling it at once would show.
func TestShardedSourceControllers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repos = 60
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "sharded")
	repo.Commit(t, "Initial commit", map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n"})

	replicas := map[string]*harness.Controller{} // identity: replica
	identity := map[string]string{}              // storage address: identity
	var kubeconfig string
	start := func(i int) string {
		// What moved leaves the old owner's disk 2 s after the move settled.
		c, id, config := startReplica(t, "source-controller", i, "--artifact-retention-ttl=2s")
		replicas[id], identity[c.StorageAddr], kubeconfig = c, id, config
		return id
	}
	for i := range 3 {
		start(i)
	}
	// The objects come once the three agree: before, the first would take them all.
	settled(t, "source-controller", 3)

	k8s := sourceClient(t)
	ns := env.Namespace(t)
	writes := watchStatusWriters(t, k8s, ns)
	for n := range repos {
		g.Expect(k8s.Create(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", n)},
			Spec: sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Interval: metav1.Duration{Duration: time.Hour}}})).To(Succeed())
	}
	request := func(value string) {
		for n := range repos {
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", n)}}
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, value)
			g.Expect(k8s.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
		}
	}
	// owners tells, once every object is ready and handled the request, the replica of each:
	// the one whose artifact server its URL names, which its shard label names too.
	var urls map[string]string // of the artifacts, at the last owners
	owners := func(request string) map[string]string {
		out := map[string]string{}
		urls = map[string]string{}
		g.Eventually(func(g Gomega) {
			out = map[string]string{}
			var list sourcev1.GitRepositoryList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(repos))
			for _, r := range list.Items {
				g.Expect(conditions.IsTrue(&r, meta.ReadyCondition)).To(BeTrue(), "%s: %v", r.Name, r.Status.Conditions)
				g.Expect(r.Status.Artifact).NotTo(BeNil())
				g.Expect(r.Status.LastHandledReconcileAt).To(Equal(request), r.Name)
				u, err := url.Parse(r.Status.Artifact.URL)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(identity).To(HaveKey(u.Host))
				out[r.Name] = identity[u.Host]
				urls[r.Name] = r.Status.Artifact.URL
				g.Expect(r.Labels).To(HaveKeyWithValue(sharding.ShardLabel, out[r.Name]), r.Name)
			}
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		return out
	}
	shares := shareOf

	first := owners("")
	t.Logf("three replicas: %v", shares(first))
	g.Expect(first).To(Equal(assigned(ns, repos, "source-controller-0", "source-controller-1", "source-controller-2")),
		"each object is reconciled by the replica the ring assigns it")
	// What users see: the shard of each object in the wide output.
	out, err := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", kubeconfig, "get", "gitrepositories",
		"-n", ns, "-o", "wide").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("SHARD"))
	g.Expect(string(out)).To(MatchRegexp(`repo-00 .* ` + first["repo-00"]))

	firstURLs := urls
	// A fourth replica joins while requests flow: it takes about a quarter, from all three.
	stop := keepRequesting(t, k8s, ns, repos)
	joined := start(3)
	time.Sleep(5 * time.Second)
	stop()
	request("after-join")
	second := owners("after-join")
	moved := movedBetween(first, second)
	t.Logf("four replicas: %v; %d moved", shares(second), len(moved))
	g.Expect(second).To(Equal(assigned(ns, repos, "source-controller-0", "source-controller-1", "source-controller-2", joined)))
	for _, name := range moved {
		g.Expect(second[name]).To(Equal(joined), "%s moved to the new replica only", name)
	}
	// The old owners stop serving what moved (their URLs answer 404), and serve on what stayed.
	g.Expect(moved).NotTo(BeEmpty())
	status := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, name := range moved {
		g.Eventually(func() int { return status(firstURLs[name]) }, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusNotFound), name)
	}
	for name, url := range urls {
		if !slices.Contains(moved, name) {
			g.Expect(status(url)).To(Equal(http.StatusOK), name)
		}
	}

	// One of the first leaves while requests flow: the others take its objects, and only its.
	gone := first["repo-00"]
	stop = keepRequesting(t, k8s, ns, repos)
	stopped := time.Now()
	g.Expect(replicas[gone].Stop(30 * time.Second)).To(Succeed())
	time.Sleep(3 * time.Second)
	stop()
	request("after-leave")
	third := owners("after-leave")
	t.Logf("the stopped replica's objects were handled by the others %v after it stopped", time.Since(stopped).Round(100*time.Millisecond))
	moved = movedBetween(second, third)
	t.Logf("three replicas again: %v; %d moved", shares(third), len(moved))
	var rest []string
	for id := range replicas {
		if id != gone {
			rest = append(rest, id)
		}
	}
	g.Expect(third).To(Equal(assigned(ns, repos, rest...)))
	for _, name := range moved {
		g.Expect(second[name]).To(Equal(gone), "%s moved although its replica stayed", name)
	}

	// The writers of each object's status, in order, are its owners in order: an old owner
	// never writes after the new one started.
	for n := range repos {
		name := fmt.Sprintf("repo-%02d", n)
		want := compact([]string{first[name], second[name], third[name]})
		g.Expect(writes.of(name)).To(Equal(want), "the status writers of %s", name)
	}
}

// assigned is the owner of each object under the ring of members (the balance within the bound
// and the share that moves are the ring's, tested in shared/sharding).
func assigned(ns string, repos int, members ...string) map[string]string {
	return assignedNamed(ns, "repo-%02d", repos, members...)
}

// assignedNamed is assigned, for objects named after format.
func assignedNamed(ns, format string, n int, members ...string) map[string]string {
	members = slices.Sorted(slices.Values(members))
	owners := sharding.Assign(members, sharding.DefaultSlots, sharding.DefaultLoad)
	out := map[string]string{}
	for i := range n {
		name := fmt.Sprintf(format, i)
		out[name] = owners[sharding.SlotOf(ns+"/"+name, sharding.DefaultSlots)]
	}
	return out
}

// startReplica runs replica i of a controller with --sharding, as <controller>-<i>, until the
// test ends; kubeconfig is the admin's it wrote.
func startReplica(t *testing.T, controller string, i int, args ...string) (c *harness.Controller, id, kubeconfig string) {
	t.Helper()
	g := NewWithT(t)
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sluice-system"}})
	if !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	dir := t.TempDir()
	id = fmt.Sprintf("%s-%d", controller, i)
	kubeconfig = kubeconfigIn(t, dir)
	c, err = harness.StartReplica(binDir, controller, id, kubeconfig, dir,
		append([]string{"--sharding", "--enable-leader-election=false"}, args...)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop(30 * time.Second) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(c.WaitReady(ctx)).To(Succeed())
	return c, id, kubeconfig
}

// settled waits until the controller's n shard Leases acknowledge the same members.
func settled(t *testing.T, controller string, n int) {
	NewWithT(t).Eventually(func(g Gomega) {
		var leases coordinationv1.LeaseList
		g.Expect(env.Client.List(context.Background(), &leases, client.InNamespace("sluice-system"),
			client.MatchingLabels{sharding.ControllerLabel: controller})).To(Succeed())
		g.Expect(leases.Items).To(HaveLen(n))
		for _, l := range leases.Items {
			g.Expect(l.Annotations[sharding.RingAnnotation]).NotTo(BeEmpty())
			g.Expect(l.Annotations[sharding.RingAnnotation]).To(Equal(leases.Items[0].Annotations[sharding.RingAnnotation]))
		}
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
}

// shareOf counts the objects of each replica.
func shareOf(owners map[string]string) map[string]int {
	out := map[string]int{}
	for _, id := range owners {
		out[id]++
	}
	return out
}

// movedBetween lists the objects whose owner changed.
func movedBetween(before, after map[string]string) []string {
	var moved []string
	for name, id := range after {
		if before[name] != id {
			moved = append(moved, name)
		}
	}
	slices.Sort(moved)
	return moved
}

// compact drops the repeats of a sequence.
func compact(s []string) []string { return slices.Compact(slices.Clone(s)) }

// keepRequesting asks for a reconcile of each of the repos objects, one after the other, until
// the returned stop is called.
func keepRequesting(t *testing.T, c client.Client, ns string, repos int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("repo-%02d", i%repos)}}
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"flow-%d"}}}`, i)
			if err := c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil && ctx.Err() == nil {
				t.Errorf("requesting a reconcile: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// statusWriters records, from a watch, the replicas that wrote each object's status, in order
// and without repeats.
type statusWriters struct {
	mu      sync.Mutex
	writers map[string][]string
}

func (w *statusWriters) of(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return compact(w.writers[name])
}

// watchStatusWriters watches the GitRepositories of ns: the writer of each status change is
// the replica whose managed fields of the status subresource appeared or changed time.
func watchStatusWriters(t *testing.T, c client.WithWatch, ns string) *statusWriters {
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := c.Watch(ctx, &sourcev1.GitRepositoryList{}, client.InNamespace(ns))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	w := &statusWriters{writers: map[string][]string{}}
	seen := map[string]map[string]string{} // object: writer: time of its entry
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			obj, ok := ev.Object.(*sourcev1.GitRepository)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			entries := map[string]string{}
			var writer string
			for _, f := range obj.ManagedFields {
				id, ok := strings.CutPrefix(f.Manager, "source-controller@")
				if !ok || f.Subresource != "status" || f.Time == nil {
					continue
				}
				entries[id] = f.Time.UTC().Format(time.RFC3339)
				if prev, ok := seen[obj.Name][id]; !ok || prev != entries[id] {
					writer = id
				}
			}
			seen[obj.Name] = entries
			if writer != "" {
				w.mu.Lock()
				w.writers[obj.Name] = append(w.writers[obj.Name], writer)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { watcher.Stop(); cancel(); <-done })
	return w
}

// Two resourceset-controller processes with --sharding share 20 ResourceSets, each applying
// a ConfigMap: each ResourceSet is labelled with, and applied by, the replica the ring assigns
// it. When one replica stops, the other takes its ResourceSets: a reconcile requested of each is
// handled, and every ConfigMap stays.
func TestShardedResourceSetControllers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const sets = 20
	replicas := map[string]*harness.Controller{}
	for i := range 2 {
		c, id, _ := startReplica(t, "resourceset-controller", i)
		replicas[id] = c
	}
	settled(t, "resourceset-controller", 2)

	ns := newBenchNamespace(t)
	rsets := map[string]*unstructured.Unstructured{}
	for i := range sets {
		name := fmt.Sprintf("rs-%02d", i)
		rs := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal(fmt.Appendf(nil, `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: %s, namespace: %s}
spec:
  serviceAccountName: applier
  resources:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}, data: {set: %s}}
`, name, ns, name, ns, name), &rs.Object)).To(Succeed())
		g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
		rsets[name] = rs
	}
	shards := func(request string) map[string]string {
		out := map[string]string{}
		for name, rs := range rsets {
			waitResourceSetReady(t, rs, request)
			out[name] = rs.GetLabels()[sharding.ShardLabel]
		}
		return out
	}
	first := shards("")
	g.Expect(first).To(Equal(assignedNamed(ns, "rs-%02d", sets, "resourceset-controller-0", "resourceset-controller-1")))
	t.Logf("two replicas: %v", shareOf(first))

	g.Expect(replicas["resourceset-controller-0"].Stop(30 * time.Second)).To(Succeed())
	for _, rs := range rsets {
		patch := []byte(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":"after-leave"}}}`)
		g.Expect(env.Client.Patch(ctx, rs, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	}
	for name, id := range shards("after-leave") {
		g.Expect(id).To(Equal("resourceset-controller-1"), name)
	}
	var cms corev1.ConfigMapList
	g.Expect(env.Client.List(ctx, &cms, client.InNamespace(ns), client.HasLabels{"resourceset.fluxcd.controlplane.io/name"})).To(Succeed())
	g.Expect(cms.Items).To(HaveLen(sets))
}

// Two gating-controller processes with --sharding: a gate owned by one replica and the
// GateNotification that reports on it owned by the other. The gate's replica delivers its
// Opened event; the notification's status records the delivery all the same, through its
// owner.
func TestShardedGatingControllers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var kubeconfig string
	for i := range 2 {
		_, _, kubeconfig = startReplica(t, "gating-controller", i, "--notification-allowed-cidrs=127.0.0.1/32")
	}
	settled(t, "gating-controller", 2)

	ns := env.Namespace(t)
	members := []string{"gating-controller-0", "gating-controller-1"}
	gates, notes := assignedNamed(ns, "gate-%02d", 50, members...), assignedNamed(ns, "note-%02d", 50, members...)
	var gateName, noteName string
	for i := range 50 {
		gateName, noteName = fmt.Sprintf("gate-%02d", i), fmt.Sprintf("note-%02d", i)
		if gates[gateName] != notes[noteName] {
			break
		}
	}
	g.Expect(gates[gateName]).NotTo(Equal(notes[noteName]))

	var mu sync.Mutex
	var posts []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)

	note := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal(fmt.Appendf(nil, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateNotification
metadata: {name: %s, namespace: %s}
spec: {type: generic, address: %q, events: [Opened], gates: [%s]}
`, noteName, ns, hook.URL, gateName), &note.Object)).To(Succeed())
	g.Expect(env.Client.Create(ctx, note)).To(Succeed())
	gate := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal(fmt.Appendf(nil, `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: %s, namespace: %s}
spec: {closed: true, window: 1h}
`, gateName, ns), &gate.Object)).To(Succeed())
	g.Expect(env.Client.Create(ctx, gate)).To(Succeed())

	plugin := func(args ...string) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl-gate"), append(args, "-n", ns)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
	}
	plugin("wait", gateName, "--for", "closed", "--timeout", "30s")
	plugin("open", gateName, "Shipping the fix")
	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(posts)
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement(ContainSubstring(`"Opened"`)))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(note), note)).To(Succeed())
		result, _, _ := unstructured.NestedString(note.Object, "status", "lastDelivery", "result")
		g.Expect(result).To(Equal("Succeeded"))
		conds, _, _ := unstructured.NestedSlice(note.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Ready"), HaveKeyWithValue("status", "True"),
			HaveKeyWithValue("message", fmt.Sprintf("Delivered the Opened event of gate '%s'", gateName)))))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	g.Expect(gate.GetLabels()).To(HaveKeyWithValue(sharding.ShardLabel, gates[gateName]))
	g.Expect(note.GetLabels()).To(HaveKeyWithValue(sharding.ShardLabel, notes[noteName]))
}
