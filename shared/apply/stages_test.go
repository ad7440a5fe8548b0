package apply

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/impersonation"
)

// The applies of a stage are sent concurrently, once every object passed its dry-run.
func TestAppliesAreConcurrent(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	inFlight := &maxInFlight{}
	a := newTestApplier(t, inFlight.RoundTrip)

	objects := configMaps(ns, "cm", 40, "v1")
	res, err := a.Apply(t.Context(), Request{Owner: types.NamespacedName{Namespace: ns, Name: "owner"}, Revision: "r1", Objects: objects})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Inventory).To(HaveLen(40))
	g.Expect(inFlight.max.Load()).To(BeNumerically(">", 1), "applies were sent one at a time")
	g.Expect(inFlight.max.Load()).To(BeNumerically("<=", 4), "more applies in flight than the concurrency")
}

// Once an owner has applied something, every object of a new revision is dry-run before any is
// applied: an invalid object applies nothing, new objects included, and the objects in the
// cluster keep the last applied revision.
func TestLaterApplyDryRunsEveryObjectFirst(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	a := newTestApplier(t, nil)
	owner := types.NamespacedName{Namespace: ns, Name: "owner"}

	first, err := a.Apply(t.Context(), Request{Owner: owner, Revision: "r1", Objects: configMaps(ns, "cm", 20, "v1")})
	g.Expect(err).NotTo(HaveOccurred())

	objects := append(configMaps(ns, "cm", 40, "v2"), invalidConfigMap(ns))
	res, err := a.Apply(t.Context(), Request{Owner: owner, Revision: "r2", Objects: objects, Inventory: first.Inventory})
	g.Expect(errors.Is(err, ErrApply)).To(BeTrue(), "error: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/invalid"))
	g.Expect(res.Inventory).To(ConsistOf(first.Inventory))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm-0"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("v", "v1"))
	err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm-30"}, cm)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a new object was created before the invalid one was found: %v", err)
}

// A first apply does not dry-run objects that do not exist: an invalid one fails its apply,
// with its name in the error, and what was created is in the inventory, so it is garbage
// collected if it leaves the set.
func TestFirstApplyWithAnInvalidObject(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	a := newTestApplier(t, nil)

	objects := append(configMaps(ns, "cm", 20, "v1"), invalidConfigMap(ns))
	res, err := a.Apply(t.Context(), Request{Owner: types.NamespacedName{Namespace: ns, Name: "owner"}, Revision: "r1", Objects: objects})
	g.Expect(errors.Is(err, ErrApply)).To(BeTrue(), "error: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("ConfigMap/" + ns + "/invalid apply failed"))
	list := &corev1.ConfigMapList{}
	g.Expect(env.Client.List(t.Context(), list, client.InNamespace(ns), client.HasLabels{"test.sluice.dev/name"})).To(Succeed())
	g.Expect(res.Inventory).To(HaveLen(len(list.Items)))
}

// maxInFlight records the most applies (PATCH, not dry-run) in flight at once.
type maxInFlight struct {
	now, max atomic.Int32
}

func (m *maxInFlight) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch || req.URL.Query().Get("dryRun") != "" {
			return next.RoundTrip(req)
		}
		n := m.now.Add(1)
		defer m.now.Add(-1)
		for {
			if old := m.max.Load(); n <= old || m.max.CompareAndSwap(old, n) {
				break
			}
		}
		return next.RoundTrip(req)
	})
}

// newTestApplier applies with a concurrency of 4, through wrap when set.
func newTestApplier(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) *Applier {
	cfg := rest.CopyConfig(env.Config)
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	c, err := client.New(cfg, client.Options{Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return &Applier{Client: impersonation.Client{Client: c}, Mapper: env.Client.RESTMapper(), FieldManager: "test", OwnerGroup: "test.sluice.dev",
		Concurrency: 4, Annotations: Annotations{Reconcile: "test.sluice.dev/reconcile", Force: "test.sluice.dev/force", Prune: "test.sluice.dev/prune"}}
}

// configMaps are n ConfigMaps <prefix>-0… with data v=value.
func configMaps(ns, prefix string, n int, value string) []*unstructured.Unstructured {
	objects := make([]*unstructured.Unstructured, n)
	for i := range objects {
		objects[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i), "namespace": ns},
			"data":     map[string]any{"v": value},
		}}
	}
	return objects
}

// invalidConfigMap has a number where the schema wants a string.
func invalidConfigMap(ns string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "invalid", "namespace": ns},
		"data":     map[string]any{"v": int64(5)},
	}}
}
