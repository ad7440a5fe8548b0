package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/owner"
	"github.com/sluice-gitops/sluice/shared/sharding"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// ControllerName is the field manager, event source and metrics name of the controller.
const ControllerName = "manifest-generator"

// Annotations on generated objects, as kustomize-controller's but in this API group:
// reconcile: disabled leaves an object in the cluster alone, prune: disabled keeps it when it
// leaves the output, force: enabled recreates it on an immutable change.
const (
	ReconcileAnnotation = "generator.toolkit.fluxcd.io/reconcile"
	PruneAnnotation     = "generator.toolkit.fluxcd.io/prune"
	ForceAnnotation     = "generator.toolkit.fluxcd.io/force"
	// ownerGroup prefixes the labels tying an applied object to its ManifestGeneration.
	ownerGroup = "generator.toolkit.fluxcd.io"
)

// ManifestGenerationReconciler generates the manifests of a target path of a source artifact
// (.flux.yaml generators, or raw YAML) and applies them as the object's account, through the
// lifecycle every owner of applied objects shares (shared/owner).
type ManifestGenerationReconciler struct {
	client.Client
	// APIReader reads ServiceAccounts uncached.
	APIReader     client.Reader
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards  *sharding.Shards
	Clients *impersonation.Clients
	Builder *build.Builder
	// RequeueDependency is how soon a generation whose source has no artifact is retried.
	RequeueDependency time.Duration
	ApplyConcurrency  int
	// DefaultMaxPrune is --max-prune: spec.maxPrune of the ManifestGenerations that set none.
	DefaultMaxPrune *intstr.IntOrString
	Metrics         *conditiongauge.Gauges
	// Scanner lists the tags of the image repositories of automated workloads; nil turns the
	// automation off.
	Scanner *imagescan.Scanner

	once      sync.Once
	lifecycle *owner.Lifecycle[*generatorv1.ManifestGeneration]
	// transports have the TLS settings of spec.automation.certSecretRef, by digest of its data.
	transports sync.Map
	// verdicts are the signature verifications of the automation, by digest and key set.
	verdicts verdicts
}

// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestgenerations/status;manifestgenerations/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories,verbs=get;list;watch
// +kubebuilder:rbac:groups=generator.toolkit.fluxcd.io,resources=manifestupdates,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;impersonate
// The controller applies arbitrary objects for ManifestGenerations without a service account.
// +kubebuilder:rbac:groups=*,resources=*,verbs=*

func (r *ManifestGenerationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.owners().ReconcileRequest(ctx, req, &generatorv1.ManifestGeneration{})
}

// owners is the lifecycle of ManifestGenerations, with this reconciler as its Kind.
func (r *ManifestGenerationReconciler) owners() *owner.Lifecycle[*generatorv1.ManifestGeneration] {
	r.once.Do(func() {
		r.lifecycle = &owner.Lifecycle[*generatorv1.ManifestGeneration]{
			Kind: r, Client: r.Client, APIReader: r.APIReader, Clients: r.Clients, EventRecorder: r.EventRecorder,
			Metrics: r.Metrics, ControllerName: ControllerName, Finalizer: generatorv1.Finalizer, OwnerGroup: ownerGroup,
			Annotations: apply.Annotations{Reconcile: ReconcileAnnotation, Force: ForceAnnotation, Prune: PruneAnnotation},
			Concurrency: r.ApplyConcurrency,
		}
	})
	return r.lifecycle
}

// Fields are the status fields the lifecycle keeps.
func (r *ManifestGenerationReconciler) Fields(obj *generatorv1.ManifestGeneration) owner.Fields {
	return owner.StatusFields[generatorv1.ResourceInventory, generatorv1.ResourceRef](&obj.Status.ObservedGeneration, &obj.Status.LastAppliedRevision, &obj.Status.Inventory)
}

// Settings: the sync timeout bounds the apply; the whole reconcile gets a minute more, for the
// download and the status.
func (r *ManifestGenerationReconciler) Settings(obj *generatorv1.ManifestGeneration) owner.Settings {
	timeout := r.Builder.Timeout(obj.Spec)
	return owner.Settings{
		Suspended: obj.Spec.Suspend, SuspendedMessage: "reconciliation is suspended for this object",
		Interval: jitter.JitteredIntervalDuration(reconcileInterval(obj)), Deadline: timeout + time.Minute, Timeout: timeout,
		ServiceAccount: obj.Spec.ServiceAccountName, Prune: obj.GetPrune(), Wait: obj.Spec.Wait,
	}
}

// Plan reads the source's artifact; the build (running the generators) happens only when the
// revision is to be applied.
func (r *ManifestGenerationReconciler) Plan(ctx context.Context, obj *generatorv1.ManifestGeneration) (owner.Plan, error) {
	art, waitMsg, err := r.sourceArtifact(ctx, obj)
	if err != nil {
		return owner.Plan{}, err
	}
	if waitMsg != "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, generatorv1.ArtifactFailedReason, "%s", waitMsg)
		return owner.Plan{Done: &ctrl.Result{RequeueAfter: r.RequeueDependency}}, nil
	}
	var configFile string
	var built []*unstructured.Unstructured
	return owner.Plan{
		Revision: art.Revision,
		Build: func(ctx context.Context) ([]*unstructured.Unstructured, error) {
			obj.Status.LastAttemptedRevision = art.Revision
			res, err := r.Builder.Build(ctx, runner.OwnerOf(generatorv1.GroupVersion.String(), generatorv1.ManifestGenerationKind, obj), art, obj.Spec)
			if err != nil {
				if build.IsTerminal(err) {
					err = reconcile.TerminalError(err)
				}
				return nil, r.owners().Failed(obj, generatorv1.BuildFailedReason, err)
			}
			if !res.FromCache {
				for _, id := range res.Dropped {
					r.EventRecorder.Eventf(obj, corev1.EventTypeWarning, "PatchEntryDropped",
						"the patch file has an entry for %s, which the generators no longer produce: it is ignored", id)
				}
			}
			configFile, built = res.ConfigFile, res.Objects
			return res.Objects, nil
		},
		Applied: func() {
			obj.Status.ConfigFile = configFile
			r.automate(ctx, obj, built)
		},
	}, nil
}

// Succeeded: Ready says the applied revision, as kustomize-controller's.
func (r *ManifestGenerationReconciler) Succeeded(obj *generatorv1.ManifestGeneration, revision string, took time.Duration) (string, string) {
	return fmt.Sprintf("Applied revision: %s", revision),
		fmt.Sprintf("Reconciliation finished in %s, next run in %s", apply.FmtDuration(took), reconcileInterval(obj))
}

// reconcileInterval is spec.interval, or the automation's scan interval when shorter: the scans
// run after the applies.
func reconcileInterval(obj *generatorv1.ManifestGeneration) time.Duration {
	interval := obj.GetInterval()
	if a := obj.Spec.Automation; a != nil && a.GetInterval() < interval {
		interval = a.GetInterval()
	}
	return interval
}
