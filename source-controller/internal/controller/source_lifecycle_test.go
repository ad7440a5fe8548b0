package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// The tests of this file show where a source's conditions follow the reconcile lifecycle every
// Sluice controller shares (shared/status.Finalize, shared/gates.Hold) rather than the
// source-controller's former one.

// conditionAt is "status|reason|message" of a condition of obj (read at key) once its status
// reflects its spec: status.observedGeneration (read by observedGeneration) is its generation.
// "" when the condition is absent.
func conditionAt(key client.ObjectKey, obj conditions.Setter, observedGeneration func() int64, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
		if observedGeneration() != obj.GetGeneration() {
			return "not observed yet"
		}
		if c := conditions.Get(obj, condType); c != nil {
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}
		return ""
	}
}

// An error that no step condition covers (here: the gates cannot be read) makes Ready=False
// with reason ReconciliationFailed and the error as message, and is retried
// (Reconciling=True, ProgressingWithRetry). The reason was `Failed` before the sources
// finished their reconciles through status.Finalize.
func TestSourceErrorOutsideTheSteps(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "app")
	sha := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	setGate(t, ns, "open", true)
	key := createRepo(t, ns, "app", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Gates: &gatesapi.Gates{Refs: []string{"open"}}})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + sha + "'"))

	// The same reconciler, on an API client that cannot read Gates. The manager does not
	// reconcile the object again meanwhile: nothing about it changes but its status.
	withWatch, err := client.NewWithWatch(env.Config, client.Options{Scheme: k8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	unavailable := errors.New("the server is currently unable to handle the request")
	failing := interceptor.NewClient(withWatch, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == gatesapi.GateGVK {
				return unavailable
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	r := &GitRepositoryReconciler{SourceReconciler: SourceReconciler{Client: failing, EventRecorder: record.NewFakeRecorder(100), Storage: store, ControllerName: ControllerName}}
	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	msg := "reading gate '" + ns + "/open': " + unavailable.Error()
	g.Expect(err).To(MatchError(msg))

	g.Expect(condition(key, meta.ReadyCondition)(g)).To(Equal("False|ReconciliationFailed|" + msg))
	g.Expect(condition(key, meta.ReconcilingCondition)(g)).To(Equal("True|ProgressingWithRetry|" + msg))
	g.Expect(condition(key, meta.StalledCondition)(g)).To(BeEmpty())
	g.Expect(revision(key)(g)).To(Equal("master@sha1:"+sha), "the artifact stays")
}

// A HelmChart whose source does not exist yet waits for it: Ready=False SourceUnavailable, and
// as nothing failed, no Reconciling condition (it was Reconciling=True ProgressingWithRetry).
// The chart is built once the source has an artifact.
func TestHelmChartWaitsForItsSource(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "podinfo", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "later"},
	})
	obj := &sourcev1.HelmChart{}
	state := func(condType string) func(g Gomega) string {
		return conditionAt(key, obj, func() int64 { return obj.Status.ObservedGeneration }, condType)
	}
	notFound := "HelmRepository '" + ns + "/later' not found"
	g.Eventually(state(meta.ReadyCondition), timeout).Should(Equal("False|SourceUnavailable|" + notFound))
	g.Expect(state(sourcev1.FetchFailedCondition)(g)).To(Equal("True|SourceUnavailable|" + notFound))
	g.Consistently(state(meta.ReconcilingCondition), 2*time.Second).Should(BeEmpty(), "retried after --requeue-dependency, never Reconciling")
	g.Expect(state(meta.StalledCondition)(g)).To(BeEmpty())

	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createHelmRepo(t, ns, "later", sourcev1.HelmRepositorySpec{URL: server.URL()})
	g.Eventually(state(meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	g.Expect(state(sourcev1.FetchFailedCondition)(g)).To(BeEmpty())
}

// A suspended source whose last attempt failed is not Reconciling: nothing is being tried. Ready
// keeps the failure. (It stayed Reconciling=True ProgressingWithRetry while suspended.)
func TestOCIRepositorySuspendedAfterAFailure(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: sourcev1.OCIRepositorySpec{
		URL: "oci://" + registry.Host() + "/app", Insecure: true, Reference: &sourcev1.OCIRepositoryRef{Tag: "missing"},
		Interval: metav1.Duration{Duration: time.Hour},
	}}
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := client.ObjectKeyFromObject(obj)

	// A tag that does not exist (yet) is retried. observedGeneration is not written for a
	// retried error: the conditions are read as they are.
	manifestMissing := And(HavePrefix("failed to get the manifest of '"), ContainSubstring(":missing'"))
	g.Eventually(func(g Gomega) string {
		return conditions.GetMessage(getOCIRepo(g, key), meta.ReconcilingCondition)
	}, timeout).Should(manifestMissing)
	o := getOCIRepo(g, key)
	g.Expect(conditions.GetReason(o, meta.ReconcilingCondition)).To(Equal(meta.ProgressingWithRetryReason))
	g.Expect(conditions.GetReason(o, meta.ReadyCondition)).To(Equal(sourcev1.OCIPullFailedReason))

	p := client.MergeFrom(o.DeepCopy())
	o.Spec.Suspend = true
	g.Expect(k8s.Patch(context.Background(), o, p)).To(Succeed())
	state := func(condType string) func(g Gomega) string {
		return conditionAt(key, obj, func() int64 { return obj.Status.ObservedGeneration }, condType)
	}
	g.Eventually(state(meta.ReconcilingCondition), timeout).Should(BeEmpty())
	g.Expect(state(meta.StalledCondition)(g)).To(BeEmpty())
	g.Expect(state(meta.ReadyCondition)(g)).To(And(HavePrefix("False|OCIArtifactPullFailed|"), ContainSubstring(":missing'")))
}

// Closed gates hold a source that has no artifact yet with Ready=False GateClosed, whatever
// its last fetch said (Ready kept the failed fetch's reason before), and without Reconciling:
// nothing is being tried.
func TestGitRepositoryGateClosedOverAFailedFetch(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "app")
	repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	key := createRepo(t, ns, "app", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{Branch: "nope"}})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(HavePrefix("False|GitOperationFailed|"))

	setGate(t, ns, "change-freeze", false)
	obj := getRepo(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Gates = &gatesapi.Gates{Refs: []string{"change-freeze"}}
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())

	state := func(condType string) func(g Gomega) string {
		return conditionAt(key, obj, func() int64 { return obj.Status.ObservedGeneration }, condType)
	}
	blocked := "Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."
	g.Eventually(state(meta.ReadyCondition), timeout).Should(Equal("False|GateClosed|" + blocked))
	g.Expect(state(gatesapi.BlockedCondition)(g)).To(Equal("True|GateClosed|" + blocked))
	g.Expect(state(meta.ReconcilingCondition)(g)).To(BeEmpty())
	g.Expect(getRepo(g, key).Status.Artifact).To(BeNil())
}

// A HelmRepository changed to type oci is Ready with no trace of the index fetch it had
// (before, a failed fetch's FetchFailed stayed and kept it Ready=False).
func TestHelmRepositoryChangedToOCI(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := createHelmRepo(t, ns, "charts", sourcev1.HelmRepositorySpec{URL: "http://127.0.0.1:1/charts"})
	g.Eventually(helmRepoState(key, sourcev1.FetchFailedCondition), timeout).Should(HavePrefix("True|IndexationFailed|"))

	obj := getHelmRepo(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Type, obj.Spec.URL = sourcev1.HelmRepositoryTypeOCI, "oci://127.0.0.1:1/charts"
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
	g.Eventually(helmRepoState(key, meta.ReadyCondition), timeout).Should(Equal(
		"True|Succeeded|Helm repository of type oci: charts are resolved from the registry by each HelmChart"))
	g.Expect(helmRepoState(key, sourcev1.FetchFailedCondition)(g)).To(BeEmpty())
	g.Expect(helmRepoState(key, meta.ReconcilingCondition)(g)).To(BeEmpty())
}

// When several step conditions fail at once, Ready reports them in the order fetch, verify,
// build, storage; with none failing, it is the kind's wording for the stored artifact, which
// ArtifactInStorage repeats.
func TestReadyFollowsTheStepConditions(t *testing.T) {
	g := NewWithT(t)
	obj := &sourcev1.HelmChart{}
	state := func(condType string) string {
		c := conditions.Get(obj, condType)
		if c == nil {
			return ""
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
	markFailure(obj, sourcev1.StorageOperationFailedCondition, sourcev1.ArchiveOperationFailedReason, "disk full")
	g.Expect(state(meta.ReadyCondition)).To(Equal("False|ArchiveOperationFailed|disk full"))
	markFailure(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "no signature")
	g.Expect(state(sourcev1.SourceVerifiedCondition)).To(Equal("False|VerificationError|no signature"))
	g.Expect(state(meta.ReadyCondition)).To(Equal("False|VerificationError|no signature"))
	markFailure(obj, sourcev1.FetchFailedCondition, sourcev1.ChartPullFailedReason, "404")
	g.Expect(state(meta.ReadyCondition)).To(Equal("False|ChartPullFailed|404"))
	markFailure(obj, sourcev1.BuildFailedCondition, sourcev1.ChartPackageFailedReason, "bad chart")
	g.Expect(state(meta.ReadyCondition)).To(Equal("False|ChartPullFailed|404"), "fetch comes first")

	obj.Status.Artifact = &meta.Artifact{Revision: "6.0.3"}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	markReady(obj, nil)
	g.Expect(state(meta.ReadyCondition)).To(Equal("False|VerificationError|no signature"))
	conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
	conditions.Delete(obj, sourcev1.BuildFailedCondition)
	conditions.Delete(obj, sourcev1.StorageOperationFailedCondition)
	markReady(obj, nil)
	g.Expect(state(meta.ReadyCondition)).To(Equal("True|Succeeded|stored artifact for revision '6.0.3'"))
	markReady(obj, func() (string, string) {
		return sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.0.3'"
	})
	g.Expect(state(meta.ReadyCondition)).To(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	g.Expect(state(sourcev1.ArtifactInStorageCondition)).To(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
}
