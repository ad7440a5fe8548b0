package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/eventmeta"
	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/secrets"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// ResourceSetInputProviderReconciler exports the inputs of ResourceSetInputProviders: the default
// values (Static), the tags of an OCI repository (OCIArtifactTag) or the answer of an HTTP service
// (ExternalService), into status.exportedInputs, where the ResourceSets that use the provider read
// them. A failure keeps the last exported inputs.
type ResourceSetInputProviderReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	// Metrics records the gotk_reconcile_condition gauges; nil records none.
	Metrics *conditiongauge.Gauges
	// Addresses are those an ExternalService may connect to (--service-cidr,
	// --external-service-allowed-cidrs); nil is the default policy: no loopback, link-local or
	// unspecified address.
	Addresses *inputs.AddressPolicy
	// Clients act as a provider's account where it reads beyond its namespace (ExternalArtifacts
	// of other namespaces); nil reads with the controller's client.
	Clients *impersonation.Clients
}

// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesetinputproviders,verbs=get;list;watch
// +kubebuilder:rbac:groups=fluxcd.controlplane.io,resources=resourcesetinputproviders/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile fetches and exports the inputs of one provider, then requeues it after its
// reconcileEvery interval (jittered). Transient failures return the error (exponential backoff),
// terminal ones stall the provider until its spec changes.
func (r *ResourceSetInputProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	obj := &rsv1.ResourceSetInputProvider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	wasReady := conditions.IsReady(obj)
	finisher := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: ControllerName}
	rec := finisher.Begin(ctx, obj, status.Fields{
		ObservedGeneration: &obj.Status.ObservedGeneration, LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	// The provider has no finalizer: a deleted provider has nothing to clean up. A disabled one
	// fetches nothing, and echoes the reconcile request as every paused object does.
	if done, err := rec.Preamble(status.Preamble{
		Suspended: obj.IsDisabled(), SuspendedMessage: "reconciliation is disabled by the annotation " + rsv1.ReconcileAnnotation,
	}); done {
		return ctrl.Result{}, err
	}

	sched, err := compileSchedule(obj)
	if err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, InvalidScheduleReason, "%s", err)
		r.EventRecorder.Event(obj, corev1.EventTypeWarning, InvalidScheduleReason, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	obj.Status.NextSchedule = nil
	if sched != nil {
		forceAt, force := forced(obj)
		if force {
			obj.Status.LastHandledForceAt = forceAt
		} else if !sched.allows(start, obj.GetTimeout(), true) {
			return r.skipped(obj, sched, start), nil
		}
	}

	if err := r.reconcileInputs(ctx, obj, wasReady, start); err != nil {
		return ctrl.Result{}, err
	}
	interval := jitter.JitteredIntervalDuration(obj.GetInterval())
	if sched != nil && !sched.allows(start.Add(interval), obj.GetTimeout(), false) {
		// The next fetch by the interval would be outside every window: wait for the next one.
		if next, ok := sched.next(start); ok {
			obj.Status.NextSchedule = next
			return ctrl.Result{RequeueAfter: time.Until(next.When.Time)}, nil
		}
	}
	return ctrl.Result{RequeueAfter: interval}, nil
}

// skipped records that the provider is outside its schedule: it fetches nothing, keeps what it
// exported, and comes back at its next window.
func (r *ResourceSetInputProviderReconciler) skipped(obj *rsv1.ResourceSetInputProvider, sched *providerSchedule, now time.Time) ctrl.Result {
	next, ok := sched.next(now)
	obj.Status.NextSchedule = next
	msg := "outside its schedule: no window opens within five years"
	if ok {
		msg = "outside its schedule: next fetch at " + next.When.UTC().Format(time.RFC3339)
	}
	if !conditions.IsReady(obj) {
		conditions.MarkFalse(obj, meta.ReadyCondition, SkippedDueToScheduleReason, "%s", msg)
	}
	if !ok {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: time.Until(next.When.Time)}
}

// reconcileInputs fetches the inputs, gives them the default values and, on success only,
// exports them with their revision: a failure leaves the last exported inputs in place for the
// ResourceSets that use them.
func (r *ResourceSetInputProviderReconciler) reconcileInputs(ctx context.Context, obj *rsv1.ResourceSetInputProvider,
	wasReady bool, start time.Time) error {
	timeout := obj.GetTimeout()
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	list, err := r.fetchInputs(fctx, obj)
	if err != nil {
		if errors.Is(fctx.Err(), context.DeadlineExceeded) && !errors.Is(err, reconcile.TerminalError(nil)) {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		return r.failed(obj, err)
	}
	exported, err := inputs.ToAPI(list)
	if err != nil {
		return r.failed(obj, err)
	}
	revision := inputs.Revision(list)
	changed := revision != obj.Status.LastExportedRevision
	// Closed gates hold new inputs back: the last exported stay, and the new revision waits. A
	// gate opened for one revision only lets only the inputs of that revision go.
	candidate := ""
	if changed {
		candidate = revision
	}
	open, err := gates.Holder{Reader: r.Client, EventRecorder: r.EventRecorder}.HoldRevision(ctx, obj, candidate, obj.Status.LastExportedRevision == "")
	if err != nil {
		return err
	}
	if !open && changed {
		gates.Waiting(obj, revision)
		if obj.Status.LastExportedRevision != "" {
			conditions.MarkTrue(obj, meta.ReadyCondition, rsv1.ReconciliationSucceededReason,
				"Reconciliation finished in %s", apply.FmtDuration(time.Since(start)))
			gates.MarkHeldReady(obj)
		}
		log.FromContext(ctx).Info("gates closed: the new inputs wait", "revision", revision)
		return nil
	}
	gates.Waiting(obj, "")
	obj.Status.ExportedInputs = exported
	obj.Status.LastExportedRevision = revision

	if changed || !wasReady {
		noun := "inputs"
		if len(list) == 1 {
			noun = "input"
		}
		// The revision is in the message too: events of equal messages are folded into one.
		msg := fmt.Sprintf("exported %d %s with revision %s", len(list), noun, revision)
		r.EventRecorder.AnnotatedEventf(obj, eventmeta.Revision(rsv1.GroupVersion.Group, revision), corev1.EventTypeNormal,
			rsv1.ReconciliationSucceededReason, "%s", msg)
		if changed {
			log.FromContext(ctx).Info(fmt.Sprintf("exported %d %s", len(list), noun), "revision", revision)
		}
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, rsv1.ReconciliationSucceededReason,
		"Reconciliation finished in %s", apply.FmtDuration(time.Since(start)))
	return nil
}

// failed records a failure as Ready=False (ReconciliationFailed) and a Warning event, and returns
// err: terminal errors (inputs.IsTerminal: a filter or URL that does not parse) become a
// reconcile.TerminalError, which status.Finalize turns into Stalled.
func (r *ResourceSetInputProviderReconciler) failed(obj *rsv1.ResourceSetInputProvider, err error) error {
	if inputs.IsTerminal(err) && !errors.Is(err, reconcile.TerminalError(nil)) {
		err = reconcile.TerminalError(err)
	}
	msg := status.UserMessage(err)
	conditions.MarkFalse(obj, meta.ReadyCondition, rsv1.ReconciliationFailedReason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, rsv1.ReconciliationFailedReason, msg)
	return err
}

// fetchInputs returns the inputs of the provider's type, with spec.defaultValues merged into each
// (the input's own keys win).
func (r *ResourceSetInputProviderReconciler) fetchInputs(ctx context.Context, obj *rsv1.ResourceSetInputProvider) ([]map[string]any, error) {
	defaults := map[string]any{}
	if len(obj.Spec.DefaultValues) > 0 {
		decoded, err := inputs.FromAPI([]rsv1.ResourceSetInput{obj.Spec.DefaultValues})
		if err != nil {
			return nil, reconcile.TerminalError(fmt.Errorf("spec.defaultValues: %w", err))
		}
		defaults = decoded[0]
	}

	var list []map[string]any
	var err error
	switch obj.Spec.Type {
	case rsv1.InputProviderStatic:
		list = inputs.Static(defaults, inputs.ID(string(obj.UID)))
	case rsv1.InputProviderOCIArtifactTag:
		var creds inputs.Credentials
		if creds, err = r.credentials(ctx, obj); err == nil {
			list, err = inputs.FetchOCIArtifactTags(ctx, obj, creds)
		}
	case rsv1.InputProviderExternalService:
		var creds inputs.Credentials
		if creds, err = r.credentials(ctx, obj); err == nil {
			list, err = inputs.FetchExternalService(ctx, obj, creds, r.Addresses)
		}
	case rsv1.InputProviderExternalArtifact:
		list, err = r.externalArtifacts(ctx, obj)
	default:
		if kind, ok := forge.KindOf(obj.Spec.Type); ok {
			list, err = r.forgeInputs(ctx, obj, kind)
			break
		}
		if slices.Contains(rsv1.CloudIdentityProviders, obj.Spec.Type) {
			return nil, reconcile.TerminalError(fmt.Errorf("provider type %s needs cloud identity (the workload identity of Azure, AWS or "+
				"Google Cloud), which Sluice does not have: list the repository with %s or %s and a token, or the registry with %s",
				obj.Spec.Type, rsv1.InputProviderGitBranch, rsv1.InputProviderGitTag, rsv1.InputProviderOCIArtifactTag))
		}
		return nil, reconcile.TerminalError(fmt.Errorf("unknown provider type %q", obj.Spec.Type))
	}
	if err != nil {
		return nil, err
	}
	if err := keepLegacyIDs(obj, list, defaults); err != nil {
		return nil, err
	}
	if len(defaults) > 0 {
		list = inputs.WithDefaults(list, defaults)
	}
	return list, nil
}

// credentials reads the Secrets the provider names, each once per reconcile: spec.secretRef's
// data, and the TLS settings and CA of spec.certSecretRef.
func (r *ResourceSetInputProviderReconciler) credentials(ctx context.Context, obj *rsv1.ResourceSetInputProvider) (inputs.Credentials, error) {
	var c inputs.Credentials
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return c, err
		}
		c.Secret = data
	}
	if ref := obj.Spec.CertSecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return c, err
		}
		if c.TLS, err = secrets.TLSConfig(ctx, obj.Namespace, ref.Name, data); err != nil {
			return c, err
		}
		c.CA = data["ca.crt"]
	}
	return c, nil
}

// secretData reads a Secret of the provider's namespace with the manager's client, which reads
// Secrets from the API server (bootstrap.ClientOptions): a replaced Secret is used at the next
// reconcile. A missing Secret is an ordinary failure (retried with backoff): it may be created
// after the provider.
func (r *ResourceSetInputProviderReconciler) secretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return secrets.Data(ctx, r.Client, namespace, name)
}
