package scenarios

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bigResourceSet stamps out one ConfigMap per input.
const bigResourceSet = `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: big
spec:
  serviceAccountName: applier
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cm-<< inputs.id >>
      data:
        id: << inputs.id | quote >>
`

// ids are the inputs of bigResourceSet: n ids, and the names of the ConfigMaps they give, sorted.
func ids(n int) (inputs []any, names []string) {
	for i := range n {
		id := fmt.Sprintf("%04d", i)
		inputs = append(inputs, map[string]any{"id": id})
		names = append(names, "cm-"+id)
	}
	return inputs, names
}

// inventoryOfConfigMaps checks that the inventory lists exactly the ConfigMaps of ns with names.
func inventoryOfConfigMaps(ns string, names []string) func(g Gomega, obj *unstructured.Unstructured) {
	want := make([]string, len(names))
	for i, n := range names {
		want[i] = ns + "_" + n + "__ConfigMap"
	}
	sort.Strings(want)
	return func(g Gomega, obj *unstructured.Unstructured) {
		got := inventory(obj)
		sort.Strings(got) // Equal on sorted lists: ConsistOf is quadratic in thousands of entries
		g.Expect(got).To(Equal(want))
	}
}

// The kube-apiserver restarts in the middle of a big apply: a ResourceSet of 2,000 ConfigMaps has
// applied some of them when the API server is killed (SIGKILL: the requests in flight are cut),
// and it starts again a few seconds later on the same etcd. The resourceset-controller reports
// the failed apply, reconnects, and the ResourceSet ends Ready with every object in the cluster
// and in its inventory, nothing twice; its watches are back too: the next change of the
// ResourceSet is applied at once. Not parallel: every controller loses the API server.
func TestScenarioFaultAPIServerRestartsMidApply(t *testing.T) {
	const n = 2000
	s := newScenario(t, "fault-apiserver")
	g := s.g
	ctx := context.Background()
	rset := s.yamlObject(bigResourceSet)
	inputs, names := ids(n)
	g.Expect(unstructured.SetNestedSlice(rset.Object, inputs, "spec", "inputs")).To(Succeed())

	// Kill the API server as soon as the apply is under way: at the first ConfigMap the watch
	// reports (polling would see the applies, sent concurrently, end first).
	applied := func(g Gomega) int {
		return len(labelled(g, s.ns, "resourceset.fluxcd.controlplane.io/name", "big"))
	}
	watcher, err := client.NewWithWatch(sys.Env.Config, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := watcher.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(s.ns),
		client.MatchingLabels{"resourceset.fluxcd.controlplane.io/name": "big"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	g.Expect(k8s().Create(ctx, rset)).To(Succeed())
	g.Eventually(w.ResultChan(), timeout).Should(Receive(HaveField("Type", watch.Added)))
	g.Expect(sys.StopAPIServer(0)).To(Succeed())
	stoppedAt := time.Now()
	t.Logf("kube-apiserver stopped")
	time.Sleep(3 * time.Second) // the controllers' requests and watches meet a closed port
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	g.Expect(sys.StartAPIServer(startCtx)).To(Succeed())
	t.Logf("kube-apiserver back after %s", time.Since(stoppedAt).Round(100*time.Millisecond))
	before := applied(g)
	t.Logf("%d of %d ConfigMaps applied when the API server went away", before, n)
	g.Expect(before).To(BeNumerically("<", n), "the API server stopped after the apply had finished: nothing was interrupted")

	// The failed apply was reported (the status could not be written while the API server was
	// away: the log is where the error is), then retried to the end.
	g.Eventually(logContains("resourceset-controller", `"Reconciler error"`, `"namespace":"`+s.ns+`"`), timeout).Should(BeTrue())
	settled(g, resourceSetGVK, s.ns, "big", HavePrefix("True|ReconciliationSucceeded|"), inventoryOfConfigMaps(s.ns, names))
	g.Expect(labelled(g, s.ns, "resourceset.fluxcd.controlplane.io/name", "big")).To(Equal(names))

	// The watches are back: one more input is applied without waiting for an interval.
	more, names := ids(n + 1)
	setInputs(g, rset, more)
	settled(g, resourceSetGVK, s.ns, "big", HavePrefix("True|ReconciliationSucceeded|"), inventoryOfConfigMaps(s.ns, names))
	g.Expect(labelled(g, s.ns, "resourceset.fluxcd.controlplane.io/name", "big")).To(Equal(names))
}
