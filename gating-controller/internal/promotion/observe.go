package promotion

import (
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Observed is one object of spec.promotion.from as read.
type Observed struct {
	// Name is "<Kind> <namespace>/<name>", for messages.
	Name string
	// Revision is the revision the object applied; empty when it says none.
	Revision string
	// Since is since when the object has kept Revision applied and Ready: the later of the time
	// it applied Revision and the time its Ready condition last became True.
	Since time.Time
	// NotReady says why the object is not Ready with Revision; empty when it is.
	NotReady string
}

// Observe reads an object's applied revision and since when it is Ready with it:
//   - the revision is status.lastAppliedRevision (ManifestGeneration, ResourceSet, Flux's
//     Kustomization), status.artifact.revision (the sources), or the chart version of a Flux
//     HelmRelease's newest release (status.history[0].chartVersion);
//   - it was applied at the firstReconciled of the newest status.history snapshot when that
//     snapshot is the revision's and succeeded (ManifestGeneration, ResourceSet, Kustomization),
//     at the firstDeployed of a HelmRelease's newest release when it is deployed, else at
//     status.artifact.lastUpdateTime (the sources);
//   - Ready must be True and observe the object's generation.
func Observe(obj *unstructured.Unstructured) Observed {
	o := Observed{Name: fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())}
	o.Revision, _, _ = unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	artifactRev, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
	if o.Revision == "" {
		o.Revision = artifactRev
	}
	release, isRelease := helmRelease(obj)
	if o.Revision == "" && isRelease {
		o.Revision, _ = release["chartVersion"].(string)
	}
	if o.Revision == "" {
		o.NotReady = "it has applied no revision yet"
		return o
	}
	ready, since, why := readyCondition(obj)
	if !ready {
		o.NotReady = why
		return o
	}
	applied, ok := appliedAt(obj, o.Revision, artifactRev)
	if isRelease {
		applied, ok = deployedAt(release, o.Revision)
	}
	if !ok {
		o.NotReady = fmt.Sprintf("its status does not say since when it applied '%s'", o.Revision)
		return o
	}
	o.Since = since
	if applied.After(since) {
		o.Since = applied
	}
	return o
}

// readyCondition is whether Ready is True for the object's generation, and since when.
func readyCondition(obj *unstructured.Unstructured) (bool, time.Time, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != meta.ReadyCondition {
			continue
		}
		if m["status"] != "True" {
			msg, _ := m["message"].(string)
			return false, time.Time{}, fmt.Sprintf("it is not Ready: %s", msg)
		}
		if gen, ok := observedGeneration(obj, m); ok && gen != obj.GetGeneration() {
			return false, time.Time{}, "it has not reconciled its latest generation yet"
		}
		raw, _ := m["lastTransitionTime"].(string)
		t, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			return false, time.Time{}, "its Ready condition has no lastTransitionTime"
		}
		return true, t, ""
	}
	return false, time.Time{}, "it has no Ready condition yet"
}

// observedGeneration is the generation the condition (else the status) observed, if it says.
func observedGeneration(obj *unstructured.Unstructured, cond map[string]any) (int64, bool) {
	switch g := cond["observedGeneration"].(type) {
	case int64:
		return g, true
	case float64:
		return int64(g), true
	}
	g, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return g, ok
}

// appliedAt is when the object applied revision, from its newest history snapshot, else from
// its artifact.
func appliedAt(obj *unstructured.Unstructured, revision, artifactRev string) (time.Time, bool) {
	if hist, ok, _ := unstructured.NestedSlice(obj.Object, "status", "history"); ok && len(hist) > 0 {
		newest, _ := hist[0].(map[string]any)
		digest, _ := newest["digest"].(string)
		metaRev, _, _ := unstructured.NestedString(newest, "metadata", "revision")
		status, _ := newest["lastReconciledStatus"].(string)
		if (digest != revision && metaRev != revision) || status != meta.ReconciliationSucceededReason {
			return time.Time{}, false
		}
		raw, _ := newest["firstReconciled"].(string)
		t, err := time.Parse(time.RFC3339, raw)
		return t, err == nil
	}
	if artifactRev == revision {
		raw, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "lastUpdateTime")
		t, err := time.Parse(time.RFC3339, raw)
		return t, err == nil
	}
	return time.Time{}, false
}

// helmRelease is the newest release of a Flux HelmRelease (status.history[0], which has a
// chartVersion where Kustomizations' snapshots have none).
func helmRelease(obj *unstructured.Unstructured) (map[string]any, bool) {
	hist, ok, _ := unstructured.NestedSlice(obj.Object, "status", "history")
	if !ok || len(hist) == 0 {
		return nil, false
	}
	newest, _ := hist[0].(map[string]any)
	_, isRelease := newest["chartVersion"]
	return newest, isRelease
}

// deployedAt is when the release of that chart version was first deployed, if it is deployed.
func deployedAt(release map[string]any, version string) (time.Time, bool) {
	if release["chartVersion"] != version || release["status"] != "deployed" {
		return time.Time{}, false
	}
	raw, _ := release["firstDeployed"].(string)
	t, err := time.Parse(time.RFC3339, raw)
	return t, err == nil
}
