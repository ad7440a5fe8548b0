package promotion

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(generation int64, status map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	obj.SetKind("ManifestGeneration")
	obj.SetNamespace("staging")
	obj.SetName("app")
	obj.SetGeneration(generation)
	return obj
}

func ready(status, since string) []any {
	return []any{map[string]any{"type": "Ready", "status": status, "message": "m", "lastTransitionTime": since}}
}

func snapshot(digest, status, first string) []any {
	return []any{map[string]any{"digest": digest, "lastReconciledStatus": status, "firstReconciled": first}}
}

// Since when an object is Ready with the revision it applied: the later of its Ready transition
// and its application (history, else the artifact); what it cannot tell holds the promotion.
func TestObserve(t *testing.T) {
	g := NewWithT(t)
	t0 := "2026-12-03T10:00:00Z"
	t1 := "2026-12-03T10:05:00Z"
	parse := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }

	o := Observe(object(1, map[string]any{"observedGeneration": int64(1), "lastAppliedRevision": "main@sha1:a",
		"conditions": ready("True", t0), "history": snapshot("main@sha1:a", "ReconciliationSucceeded", t1)}))
	g.Expect(o).To(Equal(Observed{Name: "ManifestGeneration staging/app", Revision: "main@sha1:a", Since: parse(t1)}))

	o = Observe(object(1, map[string]any{"lastAppliedRevision": "main@sha1:a",
		"conditions": ready("True", t1), "history": snapshot("main@sha1:a", "ReconciliationSucceeded", t0)}))
	g.Expect(o.Since).To(Equal(parse(t1)), "Ready later than the application")

	// A source: its artifact says when.
	o = Observe(object(1, map[string]any{"artifact": map[string]any{"revision": "main@sha1:b", "lastUpdateTime": t1},
		"conditions": ready("True", t0)}))
	g.Expect(o).To(And(HaveField("Revision", "main@sha1:b"), HaveField("Since", parse(t1)), HaveField("NotReady", "")))

	// A Flux Kustomization: its snapshots are by digest of the objects, the revision in metadata.
	o = Observe(object(1, map[string]any{"lastAppliedRevision": "main@sha1:k", "conditions": ready("True", t0),
		"history": []any{map[string]any{"digest": "sha256:objects", "lastReconciledStatus": "ReconciliationSucceeded",
			"firstReconciled": t1, "metadata": map[string]any{"revision": "main@sha1:k"}}}}))
	g.Expect(o).To(And(HaveField("Revision", "main@sha1:k"), HaveField("Since", parse(t1)), HaveField("NotReady", "")))

	// A Flux HelmRelease: its newest release, deployed.
	release := func(status string) map[string]any {
		return map[string]any{"conditions": ready("True", t0), "history": []any{map[string]any{
			"chartName": "podinfo", "chartVersion": "6.5.0", "status": status, "firstDeployed": t1}}}
	}
	o = Observe(object(1, release("deployed")))
	g.Expect(o).To(And(HaveField("Revision", "6.5.0"), HaveField("Since", parse(t1)), HaveField("NotReady", "")))
	g.Expect(Observe(object(1, release("failed"))).NotReady).To(Equal("its status does not say since when it applied '6.5.0'"))

	for why, status := range map[string]map[string]any{
		"it has applied no revision yet": {"conditions": ready("True", t0)},
		"it is not Ready: m":             {"lastAppliedRevision": "r", "conditions": ready("False", t0)},
		"it has no Ready condition yet":  {"lastAppliedRevision": "r"},
		"it has not reconciled its latest generation yet": {"lastAppliedRevision": "r", "observedGeneration": int64(1),
			"conditions": ready("True", t0)},
		"its status does not say since when it applied 'r'": {"lastAppliedRevision": "r", "conditions": ready("True", t0),
			"history": snapshot("r", "HealthCheckFailed", t0)},
	} {
		g.Expect(Observe(object(2, status)).NotReady).To(Equal(why))
	}
}

// Evaluate: one revision everywhere, soaked from the latest Since; the promoted one is not
// promoted again; disagreeing objects wait.
func TestEvaluate(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := Observed{Name: "A", Revision: "r1", Since: t0}
	b := Observed{Name: "B", Revision: "r1", Since: t0.Add(10 * time.Second)}

	res := Evaluate([]Observed{a, b}, time.Minute, "", t0.Add(30*time.Second))
	g.Expect(res.Soaked).To(BeFalse())
	g.Expect(*res.OpensAt).To(Equal(t0.Add(70 * time.Second)))
	res = Evaluate([]Observed{a, b}, time.Minute, "", t0.Add(70*time.Second))
	g.Expect(res).To(And(HaveField("Soaked", true), HaveField("Message", "revision 'r1' applied and Ready for 1m0s in A, B")))
	g.Expect(Evaluate([]Observed{a, b}, time.Minute, "r1", t0.Add(time.Hour)).Soaked).To(BeFalse(), "promoted already")

	c := Observed{Name: "C", Revision: "r2", Since: t0}
	g.Expect(Evaluate([]Observed{a, c}, 0, "", t0.Add(time.Hour))).To(Equal(Result{
		Message: "waiting for the objects to apply one revision: A applied 'r1', C applied 'r2'"}))
	down := Observed{Name: "B", Revision: "r1", NotReady: "it is not Ready: x"}
	g.Expect(Evaluate([]Observed{a, down}, 0, "", t0.Add(time.Hour))).To(Equal(Result{Candidate: "r1",
		Message: "revision 'r1' waits for B: it is not Ready: x"}))
}
