package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testenv"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// rsipCreate creates a ResourceSetInputProvider from YAML as a user writes it, in namespace ns.
func rsipCreate(t *testing.T, ns, manifest string) *rsv1.ResourceSetInputProvider {
	t.Helper()
	g := NewWithT(t)
	obj := &rsv1.ResourceSetInputProvider{}
	g.Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed())
	obj.Namespace = ns
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return obj
}

func rsipGet(g Gomega, key client.ObjectKey) *rsv1.ResourceSetInputProvider {
	obj := &rsv1.ResourceSetInputProvider{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// rsipUpdate changes a provider with a merge patch, as `kubectl apply` would.
func rsipUpdate(t *testing.T, key client.ObjectKey, change func(*rsv1.ResourceSetInputProvider)) {
	t.Helper()
	g := NewWithT(t)
	obj := rsipGet(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	change(obj)
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

// rsipCondition is "status|reason|message" of a condition once the status reflects the spec
// (observedGeneration, or a failure of the new generation) and the last reconcile request.
func rsipCondition(key client.ObjectKey, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := rsipGet(g, key)
		if obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt {
			return "not observed yet"
		}
		// Ready=True and Stalled count once the generation is observed too.
		ready := conditions.Get(obj, meta.ReadyCondition)
		if obj.Status.ObservedGeneration != obj.Generation &&
			(ready == nil || ready.Status != metav1.ConditionFalse || condType == meta.StalledCondition) {
			return "not observed yet"
		}
		if c := conditions.Get(obj, condType); c != nil {
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}
		return ""
	}
}

// rsipReady waits for Ready=True, "Reconciliation finished in ...", of the current spec and
// request.
func rsipReady(t *testing.T, key client.ObjectKey) *rsv1.ResourceSetInputProvider {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(rsipCondition(key, meta.ReadyCondition), timeout).Should(
		MatchRegexp(`^True\|ReconciliationSucceeded\|Reconciliation finished in [0-9.]+(ms|s|m)$`))
	return rsipGet(g, key)
}

// rsipFailed waits for Ready=False, ReconciliationFailed, of the current spec and request, and
// returns the message.
func rsipFailed(t *testing.T, key client.ObjectKey) string {
	t.Helper()
	var msg string
	NewWithT(t).Eventually(func(g Gomega) string {
		s := rsipCondition(key, meta.ReadyCondition)(g)
		if rest, ok := strings.CutPrefix(s, "False|ReconciliationFailed|"); ok {
			msg = rest
			return "failed"
		}
		return s
	}, timeout).Should(Equal("failed"))
	return msg
}

// rsipInputs are the exported inputs as plain values (whole numbers as int64).
func rsipInputs(g Gomega, obj *rsv1.ResourceSetInputProvider) []map[string]any {
	in, err := inputs.FromAPI(obj.Status.ExportedInputs)
	g.Expect(err).NotTo(HaveOccurred())
	return in
}

// rsipEvents are the events of a provider.
func rsipEvents(g Gomega, key client.ObjectKey) []corev1.Event {
	list := &corev1.EventList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(key.Namespace))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == rsv1.ResourceSetInputProviderKind && e.InvolvedObject.Name == key.Name {
			out = append(out, e)
		}
	}
	return out
}

// rsipEventMessages are the provider's events as "type reason: message".
func rsipEventMessages(key client.ObjectKey) func(g Gomega) []string {
	return func(g Gomega) []string {
		var out []string
		for _, e := range rsipEvents(g, key) {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
		return out
	}
}

// rsipEventFor waits for a Normal event whose revision annotation is revision, and returns its
// message.
func rsipEventFor(t *testing.T, key client.ObjectKey, revision string) string {
	t.Helper()
	var msg string
	NewWithT(t).Eventually(func(g Gomega) bool {
		for _, e := range rsipEvents(g, key) {
			if e.Type == corev1.EventTypeNormal && e.Annotations[rsv1.GroupVersion.Group+"/revision"] == revision {
				msg = e.Reason + ": " + e.Message
				return true
			}
		}
		return false
	}, timeout).Should(BeTrue(), "a Normal event with the revision %s", revision)
	return msg
}

// rsipSecret creates a Secret of the given type.
func rsipSecret(t *testing.T, ns, name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: data}
	NewWithT(t).Expect(k8s.Create(context.Background(), s)).To(Succeed())
	return s
}

// rsipLogsFree checks that no reconciler log line holds one of the secrets.
func rsipLogsFree(t *testing.T, secrets ...string) {
	t.Helper()
	all := strings.Join(logs.Lines(), "\n")
	for _, s := range secrets {
		NewWithT(t).Expect(all).NotTo(ContainSubstring(s), "a secret value was logged")
	}
}

// A Static provider exports its default values as one input with a generated id; a new spec
// exports new values with a new id and revision, and each change is announced by an event that
// carries the revision. A reconcile request is echoed in lastHandledReconcileAt.
func TestInputProviderStaticExportsDefaultValues(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	obj := rsipCreate(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: tenant-defaults
spec:
  type: Static
  defaultValues:
    tenant: team1
    replicas: 2
    app:
      version: "6.7.x"
      debug: false
`)
	key := client.ObjectKeyFromObject(obj)

	obj = rsipReady(t, key)
	got := rsipInputs(g, obj)
	g.Expect(got).To(HaveLen(1))
	// flux-operator's id: that of the provider's UID.
	g.Expect(got[0]).To(HaveKeyWithValue("id", inputs.ID(string(obj.UID))))
	g.Expect(got[0]).To(HaveKeyWithValue("tenant", "team1"))
	g.Expect(got[0]).To(HaveKeyWithValue("replicas", int64(2)))
	g.Expect(got[0]).To(HaveKeyWithValue("app", map[string]any{"version": "6.7.x", "debug": false}))
	g.Expect(obj.Status.LastExportedRevision).To(Equal(inputs.Revision(got)))
	g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
	g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
	g.Expect(rsipEventFor(t, key, obj.Status.LastExportedRevision)).To(Equal("ReconciliationSucceeded: exported 1 input with revision " + obj.Status.LastExportedRevision))
	firstID, firstRevision := got[0]["id"], obj.Status.LastExportedRevision

	// A reconcile request is handled and echoed; the same values give the same id and revision.
	poke(t, obj)
	obj = rsipReady(t, key)
	g.Expect(obj.Status.LastHandledReconcileAt).To(HavePrefix("poke-"))
	g.Expect(obj.Status.LastExportedRevision).To(Equal(firstRevision))

	// New values: the same id (objects named after it stay), a new revision, a new event.
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) {
		p.Spec.DefaultValues["tenant"].Raw = []byte(`"team2"`)
	})
	obj = rsipReady(t, key)
	got = rsipInputs(g, obj)
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0]).To(HaveKeyWithValue("tenant", "team2"))
	g.Expect(got[0]["id"]).To(Equal(firstID))
	g.Expect(obj.Status.LastExportedRevision).NotTo(Equal(firstRevision))
	rsipEventFor(t, key, obj.Status.LastExportedRevision)

	// An id among the default values is replaced, as flux-operator replaces it.
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) {
		p.Spec.DefaultValues["id"] = p.Spec.DefaultValues["tenant"].DeepCopy()
	})
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)[0]).To(HaveKeyWithValue("id", firstID))
}

// A provider whose inputs were exported by a Sluice from before flux-operator's ids keeps their
// ids, so that an upgrade deletes and recreates no object named after them: a Static provider
// keeps the id of its values (or the id among them) while they stay, and takes the id of its UID
// when they change, as its id changed with its values before.
func TestInputProviderKeepsLegacyIDs(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	obj := rsipCreate(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: upgraded
spec:
  type: Static
  defaultValues:
    tenant: team1
`)
	key := client.ObjectKeyFromObject(obj)
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)[0]).To(HaveKeyWithValue("id", inputs.ID(string(obj.UID))))

	// What the earlier Sluice exported for these values.
	legacy := inputs.LegacyStaticID(map[string]any{"tenant": "team1"})
	exported, err := inputs.ToAPI([]map[string]any{{"id": legacy, "tenant": "team1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error { // retried: the controller may write the status meanwhile
		obj = rsipGet(g, key)
		obj.Status.ExportedInputs = exported
		obj.Status.LastExportedRevision = "sha256:earlier"
		return k8s.Status().Update(context.Background(), obj)
	}, timeout).Should(Succeed())
	poke(t, obj)
	g.Eventually(func(g Gomega) string {
		return rsipGet(g, key).Status.LastExportedRevision
	}, timeout).ShouldNot(Equal("sha256:earlier"))
	obj = rsipReady(t, key)
	g.Expect(rsipInputs(g, obj)).To(Equal([]map[string]any{{"id": legacy, "tenant": "team1"}}))

	// New values: the id of the UID.
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) {
		p.Spec.DefaultValues["tenant"].Raw = []byte(`"team2"`)
	})
	g.Eventually(func(g Gomega) []map[string]any { return rsipInputs(g, rsipGet(g, key)) }, timeout).Should(
		Equal([]map[string]any{{"id": inputs.ID(string(obj.UID)), "tenant": "team2"}}))
}

// `fluxcd.controlplane.io/reconcile: disabled` pauses a provider: a new spec is not fetched and
// the exported inputs stay; a reconcile request is echoed, as on every paused object (it was
// left unhandled before the reconcilers shared one preamble). Removing the annotation resumes
// it at once.
func TestInputProviderDisabledAnnotationPauses(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	obj := rsipCreate(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: paused
spec:
  type: Static
  defaultValues:
    tenant: team1
`)
	key := client.ObjectKeyFromObject(obj)
	before := rsipReady(t, key)

	annotate(t, obj, rsv1.ReconcileAnnotation, rsv1.DisabledValue)
	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) {
		p.Spec.DefaultValues["tenant"].Raw = []byte(`"team2"`)
	})
	requested := testenv.Poke(t, k8s, obj)
	g.Eventually(func(g Gomega) string {
		return rsipGet(g, key).Status.LastHandledReconcileAt
	}, timeout).Should(Equal(requested))
	g.Consistently(func(g Gomega) rsv1.ResourceSetInputProviderStatus {
		st := rsipGet(g, key).Status
		st.LastHandledReconcileAt, st.ObservedGeneration = before.Status.LastHandledReconcileAt, before.Status.ObservedGeneration
		return st
	}, 3*time.Second, 250*time.Millisecond).Should(Equal(before.Status), "nothing fetched, the inputs and conditions kept")

	// Enabled again, the provider fetches the spec it skipped. It was Ready all along (disabled
	// keeps the conditions), so wait for the generation it observes, not for Ready.
	annotate(t, obj, rsv1.ReconcileAnnotation, "")
	g.Eventually(func(g Gomega) {
		obj := rsipGet(g, key)
		g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(rsipInputs(g, obj)[0]).To(HaveKeyWithValue("tenant", "team2"))
	}, timeout).Should(Succeed())
	rsipReady(t, key)
}
