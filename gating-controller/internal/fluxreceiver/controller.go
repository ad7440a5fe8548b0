package fluxreceiver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/conditiongauge"
	"github.com/sluice-gitops/sluice/shared/secrets"
	"github.com/sluice-gitops/sluice/shared/sharding"
	"github.com/sluice-gitops/sluice/shared/status"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// FieldOwner is the field manager of the Receivers' status, the gating-controller's name.
const FieldOwner = "gating-controller"

// ReceiverReconciler gives each Receiver its webhook path: it reads the token of spec.secretRef,
// writes /hook/<sha256(token+name+namespace)> in status.webhookPath and marks the Receiver
// Ready, which the server requires before it takes a request. A spec the receiver cannot serve
// stalls the Receiver.
type ReceiverReconciler struct {
	client.Client
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	// Metrics records the readiness gauges; nil records none.
	Metrics *conditiongauge.Gauges
	// AllowCrossNamespaceRefs lets spec.resources name objects of other namespaces
	// (--webhook-receiver-allow-cross-namespace-refs); without it such a Receiver stalls.
	AllowCrossNamespaceRefs bool
	// RequeueDependency is how soon a Receiver whose Secret or token is missing is looked at
	// again (--requeue-dependency).
	RequeueDependency time.Duration
}

func (r *ReceiverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &notificationv1.Receiver{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec := status.Finisher{Client: r.Client, Metrics: r.Metrics, FieldOwner: FieldOwner}.Begin(ctx, obj, status.Fields{
		ObservedGeneration: &obj.Status.ObservedGeneration, LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	// A Receiver leaves nothing behind: no finalizer. Suspended, the server answers its path 503.
	if done, err := rec.Preamble(status.Preamble{
		Suspended: obj.Spec.Suspend, SuspendedMessage: "Reconciliation is suspended for this object",
	}); done {
		return ctrl.Result{}, err
	}

	if reason, err := validateSpec(obj, r.AllowCrossNamespaceRefs); err != nil {
		// Nothing a retry fixes: Finalize stalls the Receiver with Ready's reason and message.
		conditions.MarkFalse(obj, meta.ReadyCondition, reason, "%s", err)
		obj.Status.WebhookPath = ""
		r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}

	token, err := r.token(ctx, obj)
	if err != nil {
		var missing *tokenNotFound
		if !errors.As(err, &missing) {
			return ctrl.Result{}, err
		}
		// Waiting on the Secret: looked at again, without a backoff; said once.
		if !conditions.IsFalse(obj, meta.ReadyCondition) || conditions.GetMessage(obj, meta.ReadyCondition) != err.Error() {
			r.EventRecorder.Event(obj, corev1.EventTypeWarning, notificationv1.TokenNotFoundReason, err.Error())
		}
		conditions.MarkFalse(obj, meta.ReadyCondition, notificationv1.TokenNotFoundReason, "%s", err)
		obj.Status.WebhookPath = ""
		return ctrl.Result{RequeueAfter: r.RequeueDependency}, nil
	}
	path := obj.GetWebhookPath(token)
	msg := "Receiver initialized for path: " + path
	if obj.Status.WebhookPath != path {
		// Not the path itself: for a generic Receiver it is the only credential. It is in the
		// status, for those who may read the Receiver.
		ctrl.LoggerFrom(ctx).Info("Receiver initialized for a new webhook path")
		r.EventRecorder.Event(obj, corev1.EventTypeNormal, meta.SucceededReason,
			"Receiver initialized for a new webhook path (.status.webhookPath)")
		obj.Status.WebhookPath = path
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "%s", msg)
	return ctrl.Result{RequeueAfter: jitter.JitteredIntervalDuration(obj.GetInterval())}, nil
}

// tokenNotFound is a missing Secret or token, in the words of what to do.
type tokenNotFound struct{ msg string }

func (e *tokenNotFound) Error() string { return e.msg }

// token reads the token of spec.secretRef; a missing Secret or token is a *tokenNotFound.
func (r *ReceiverReconciler) token(ctx context.Context, obj *notificationv1.Receiver) (string, error) {
	name := obj.Namespace + "/" + obj.Spec.SecretRef.Name
	data, err := secrets.Data(ctx, r.Client, obj.Namespace, obj.Spec.SecretRef.Name)
	if apierrors.IsNotFound(err) {
		return "", &tokenNotFound{msg: fmt.Sprintf("Secret '%s' not found: create it with the webhook's secret token under '%s'",
			name, notificationv1.TokenKey)}
	}
	if err != nil {
		return "", err
	}
	token := data[notificationv1.TokenKey]
	if len(token) == 0 {
		return "", &tokenNotFound{msg: fmt.Sprintf("Secret '%s' has no '%s' key: add the webhook's secret token under '%s'",
			name, notificationv1.TokenKey, notificationv1.TokenKey)}
	}
	return string(token), nil
}

// validateSpec finds what in the spec the receiver cannot serve: a type Sluice does not
// implement, a CEL filter that does not compile, an entry of spec.resources whose apiVersion is
// not of its kind's group, or that names another namespace when that is not allowed. It returns
// the reason of the Ready condition and an error that says what to fix.
func validateSpec(obj *notificationv1.Receiver, allowCrossNamespace bool) (string, error) {
	if !implemented[obj.Spec.Type] {
		return notificationv1.ValidationFailedReason, fmt.Errorf(
			"type '%s' is not implemented by Sluice's receiver: use one of %s (docs/flux-receiver.md)",
			obj.Spec.Type, strings.Join(slices.Sorted(maps.Keys(implemented)), ", "))
	}
	if obj.Spec.SecretRef == nil {
		return notificationv1.ValidationFailedReason, fmt.Errorf("spec.secretRef is required for type '%s'", obj.Spec.Type)
	}
	if _, err := compileFilter(obj.Spec.ResourceFilter); err != nil {
		return meta.InvalidCELExpressionReason, fmt.Errorf("spec.resourceFilter: %w", err)
	}
	for i, res := range obj.Spec.Resources {
		if _, err := compileFilter(res.Filter); err != nil {
			return meta.InvalidCELExpressionReason, fmt.Errorf("spec.resources[%d].filter: %w", i, err)
		}
		if _, err := gvkOf(res.CrossNamespaceObjectReference); err != nil {
			return notificationv1.ValidationFailedReason, fmt.Errorf("spec.resources[%d]: %w", i, err)
		}
		if res.Namespace != "" && res.Namespace != obj.Namespace && !allowCrossNamespace {
			return notificationv1.ValidationFailedReason, fmt.Errorf(
				"spec.resources[%d]: %s/%s is in namespace '%s': a Receiver may only ask objects of its own namespace "+
					"(the gating-controller runs without --webhook-receiver-allow-cross-namespace-refs)",
				i, res.Kind, res.Name, res.Namespace)
		}
	}
	return "", nil
}
