package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-gitops/sluice/shared/testenv"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// createResourceSet creates a ResourceSet from YAML as a user writes it, in namespace ns
// ("NAMESPACE" in the text is replaced by ns, so templates can name it).
func createResourceSet(t testing.TB, ns, manifest string) client.ObjectKey {
	t.Helper()
	g := NewWithT(t)
	obj := &rsv1.ResourceSet{}
	g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(manifest, "NAMESPACE", ns)), obj)).To(Succeed())
	obj.Namespace = ns
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

func getResourceSet(g Gomega, key client.ObjectKey) *rsv1.ResourceSet {
	obj := &rsv1.ResourceSet{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// updateResourceSet changes a ResourceSet with a merge patch, as `kubectl apply` would.
func updateResourceSet(t *testing.T, key client.ObjectKey, change func(*rsv1.ResourceSet)) {
	t.Helper()
	g := NewWithT(t)
	obj := getResourceSet(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	change(obj)
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

// rsetCondition is "status|reason|message" of a condition once the status reflects the spec
// (observedGeneration, of the status and of the condition) and the last reconcile request.
func rsetCondition(key client.ObjectKey, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getResourceSet(g, key)
		if obj.Status.ObservedGeneration != obj.Generation && condType == meta.ReadyCondition {
			if c := conditions.Get(obj, meta.ReadyCondition); c == nil || c.Status == "True" {
				return "not observed yet"
			}
		}
		if obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt {
			return "not observed yet"
		}
		if c := conditions.Get(obj, condType); c != nil {
			if c.ObservedGeneration != obj.Generation {
				return "not observed yet" // a condition of the previous spec
			}
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}
		return ""
	}
}

// readyIn waits for Ready=True, "Reconciliation finished in ...".
func readyIn(t *testing.T, key client.ObjectKey) {
	t.Helper()
	NewWithT(t).Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(
		MatchRegexp(`^True\|ReconciliationSucceeded\|Reconciliation finished in [0-9.]+m?s$`))
}

// getObject reads an object of any kind; nil when it does not exist.
func getObject(g Gomega, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return u
}

// inventoryIDs are the ids of the inventory.
func inventoryIDs(g Gomega, key client.ObjectKey) []string {
	inv := getResourceSet(g, key).Status.Inventory
	if inv == nil {
		return nil
	}
	ids := make([]string, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		ids = append(ids, e.ID+"@"+e.Version)
	}
	return ids
}

// eventsOf lists the events of an object as "type reason: message".
func eventsOf(key client.ObjectKey) func(g Gomega) []string {
	return testenv.EventsOf(k8s, key, rsv1.ResourceSetKind)
}

func keyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
