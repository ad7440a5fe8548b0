package dependency

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const gateExpr = "string(base64.decode(data.gate)) == 'opened'\n"

func createSecret(t *testing.T, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	NewWithT(t).Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	return secret
}

// The Secret gate of docs/resourceset.md: the expression decodes the Secret's data.
func TestSecretGateReadyExpr(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ref := Ref{APIVersion: "v1", Kind: "Secret", Name: "my-gate", Namespace: ns, Ready: true, ReadyExpr: gateExpr}
	name := "dependency 'v1/Secret " + ns + "/my-gate'"

	g.Expect(check(ns, ref)).To(beNotReady(name + " not found"))

	secret := createSecret(t, ns, "my-gate", map[string]string{"other": "x"})
	// The key is missing: a run-time error, the Secret may get it later.
	g.Expect(check(ns, ref)).To(beNotReady(name + " readyExpr failed: no such key: gate"))

	secret.StringData = map[string]string{"gate": "closed"}
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	g.Expect(check(ns, ref)).To(beNotReady(name + " readyExpr evaluated to false"))

	secret.StringData = map[string]string{"gate": "opened"}
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	g.Expect(check(ns, ref)).To(Succeed())

	// A Secret has no Ready condition: with ready: true and no expression it is ready as it exists
	// (kstatus), and readyExpr decides whatever ready says.
	g.Expect(check(ns, Ref{APIVersion: "v1", Kind: "Secret", Name: "my-gate", Ready: true})).To(Succeed())
	ref.Ready = false
	ref.ReadyExpr = "string(base64.decode(data.gate)) == 'closed'"
	g.Expect(check(ns, ref)).To(beNotReady(name + " readyExpr evaluated to false"))
}

// Tenancy: the data of a Secret in another namespace than the ResourceSet's is removed before
// evaluation; the rest of the object stays readable.
func TestSecretDataOfOtherNamespacesIsHidden(t *testing.T) {
	g := NewWithT(t)
	owner, other := env.Namespace(t), env.Namespace(t)
	createSecret(t, other, "my-gate", map[string]string{"gate": "opened"})
	name := "dependency 'v1/Secret " + other + "/my-gate'"
	hint := " (the data, annotations and managed fields of a Secret in another namespace than the ResourceSet are not readable)"
	ref := Ref{APIVersion: "v1", Kind: "Secret", Name: "my-gate", Namespace: other, ReadyExpr: gateExpr}

	g.Expect(check(other, ref)).To(Succeed())
	ref.ReadyExpr = "has(data.gate) && size(self.data) > 0"
	g.Expect(check(other, ref)).To(Succeed())
	ref.ReadyExpr = gateExpr
	g.Expect(check(owner, ref)).To(beNotReady(name + " readyExpr failed: no such key: gate" + hint))

	for expr, want := range map[string]string{
		"has(data.gate)":      name + " readyExpr evaluated to false" + hint,
		"size(self.data) > 0": name + " readyExpr failed: no such key: data" + hint,
		"string(base64.decode(stringData.gate)) == 'opened'": name + " readyExpr failed: no such key: gate" + hint,
	} {
		ref.ReadyExpr = expr
		g.Expect(check(owner, ref)).To(beNotReady(want), expr)
	}

	// Metadata and type stay readable; a Secret's `type` is a CEL type name, read through self.
	ref.ReadyExpr = "self.type == 'Opaque' && metadata.name == 'my-gate' && kind == 'Secret'"
	g.Expect(check(owner, ref)).To(Succeed())

	// The annotations go too: kubectl's last-applied-configuration holds the data in plain text.
	// So do the managed fields, which name the data's keys.
	secret := &corev1.Secret{}
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: other, Name: "my-gate"}, secret)).To(Succeed())
	secret.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"stringData":{"gate":"opened"}}`}
	g.Expect(k8s.Update(t.Context(), secret)).To(Succeed())
	ref.ReadyExpr = "metadata.annotations['" + corev1.LastAppliedConfigAnnotation + "'].contains('opened')"
	g.Expect(check(other, ref)).To(Succeed(), "readable in the Secret's own namespace")
	g.Expect(check(owner, ref)).To(beNotReady(name + " readyExpr failed: no such key: annotations" + hint))
	ref.ReadyExpr = "has(metadata.annotations) || has(metadata.managedFields) || has(self.metadata.annotations)"
	g.Expect(check(owner, ref)).To(beNotReady(name + " readyExpr evaluated to false" + hint))
}

// The Cluster API example of docs/resourceset.md: generation observed and control plane ready.
func TestClusterReadyExpr(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ref := Ref{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Name: "my-cluster", Namespace: ns, Ready: true,
		ReadyExpr: "metadata.generation == status.observedGeneration &&\nstatus.controlPlaneReady == true\n"}
	name := "dependency 'cluster.x-k8s.io/v1beta1/Cluster " + ns + "/my-cluster'"

	cluster := createObject(t, "cluster.x-k8s.io/v1beta1", "Cluster", ns, "my-cluster", map[string]any{"paused": false}, nil)
	// No status yet: status is an empty map, so the field is missing.
	g.Expect(check(ns, ref)).To(beNotReady(name + " readyExpr failed: no such key: observedGeneration"))

	setStatus(t, cluster, map[string]any{"observedGeneration": int64(1), "controlPlaneReady": false})
	g.Expect(check(ns, ref)).To(beNotReady(name + " readyExpr evaluated to false"))

	setStatus(t, cluster, map[string]any{"observedGeneration": int64(1), "controlPlaneReady": true})
	g.Expect(check(ns, ref)).To(Succeed())

	// has() works on a missing status.
	bare := createObject(t, "cluster.x-k8s.io/v1beta1", "Cluster", ns, "bare", map[string]any{}, nil)
	g.Expect(check(ns, Ref{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Name: bare.GetName(),
		ReadyExpr: "!has(status.observedGeneration) && status.?phase.orValue('none') == 'none'"})).To(Succeed())
}

// Any top-level field of any kind is a variable (here a Role's rules), comprehension variables
// are not, and a non-bool result found only at run time is reported.
func TestAnyTopLevelFieldIsAVariable(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}
	g.Expect(k8s.Create(context.Background(), role)).To(Succeed())
	ref := Ref{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Name: "reader"}
	name := "dependency 'rbac.authorization.k8s.io/v1/Role " + ns + "/reader'"

	for expr, want := range map[string]string{
		"rules.exists(r, r.verbs.exists(v, v == 'list'))":   "",
		"rules.all(rule, rule.resources == ['configmaps'])": "",
		"rules.map(r, r.verbs.size()).exists(n, n == 2)":    "",
		"rules.exists(r, 'watch' in r.verbs)":               name + " readyExpr evaluated to false",
		"aggregationRule.clusterRoleSelectors.size() > 0":   name + " readyExpr failed: no such attribute(s): aggregationRule",
		"metadata.name": name + " readyExpr evaluated to string, not bool",
	} {
		ref.ReadyExpr = expr
		if want == "" {
			g.Expect(check(ns, ref)).To(Succeed(), expr)
		} else {
			g.Expect(check(ns, ref)).To(beNotReady(want), expr)
		}
	}
}

// A hostile expression is stopped by the cost limit, and reported as not ready; reasonable
// expressions on the same object are evaluated.
func TestCostLimitStopsHostileExpressions(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createObject(t, "testing.sluice.dev/v1", "Widget", ns, "big", map[string]any{"items": intList(2000)}, nil)
	ref := Ref{APIVersion: "testing.sluice.dev/v1", Kind: "Widget", Name: "big",
		ReadyExpr: "spec.items.all(x, spec.items.all(y, x + y >= 0))"}
	g.Expect(check(ns, ref)).To(beNotReady(
		"dependency 'testing.sluice.dev/v1/Widget " + ns + "/big' readyExpr failed: evaluation cost exceeded the limit of 10000"))

	for _, expr := range []string{
		"size(spec.items) == 2000 && spec.items[1999] == 1999",
		"spec.items.exists(x, x == 1000)",
	} {
		ref.ReadyExpr = expr
		g.Expect(check(ns, ref)).To(Succeed(), expr)
	}
}

func intList(n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return items
}

// Evaluation stops when the context ends; that is not a verdict on the dependency.
func TestEvaluationStopsWhenTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	prog := NewCache().get("spec.items.all(x, spec.items.all(y, x + y >= 0))")
	g.Expect(prog.err).To(BeNil())
	items := intList(500)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := evaluate(ctx, (&Checker{}).words(), "testing.sluice.dev/v1/Widget dev/big", map[string]any{"spec": map[string]any{"items": items}}, prog, false)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(IsNotReady(err)).To(BeFalse())
	g.Expect(IsTerminal(err)).To(BeFalse())
}
