package fluxsyncs

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kuberecorder "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/sharding"
)

// FieldOwner is the field manager of every write to Flux's objects.
const FieldOwner = "gating-controller"

// InvalidGatesReason is the reason of the Warning event on an object whose gates annotation
// does not parse.
const InvalidGatesReason = "InvalidGates"

// waitingRefresh is how often the revision waiting behind the gates is read again while they
// hold an object whose kind can tell it.
const waitingRefresh = time.Minute

// Reconciler holds and releases the objects of one Flux kind.
type Reconciler struct {
	// Client reads the objects' metadata from the cache and writes to the API.
	Client client.Client
	// APIReader reads what the cache does not hold (spec and status), uncached.
	APIReader     client.Reader
	EventRecorder kuberecorder.EventRecorder
	// Shards, with --sharding, say which objects this replica reconciles; nil: all of them.
	Shards *sharding.Shards
	Clock  clock.PassiveClock
	Kind   Kind
}

// Reconcile decides from the object's annotations and its gates, not from memory: an object
// bound and closed is held; one that is held (or suspended at admission) and whose gates open,
// or that lost its annotation, is released.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(r.Kind.GVK)
	if err := r.Client.Get(ctx, req.NamespacedName, meta); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !meta.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	annotations := meta.GetAnnotations()
	value, bound := annotations[gatesapi.GatesAnnotation]
	if !bound {
		// Whatever the gates did goes with the binding; Flux's own conditions stay.
		return ctrl.Result{}, r.release(ctx, req.NamespacedName, true)
	}
	verdict, err := r.evaluate(ctx, meta, value)
	if err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("evaluated gates", "open", verdict.open, "heldBy", verdict.heldBy)
	if verdict.open {
		if verdict.byRevision {
			return ctrl.Result{RequeueAfter: waitingRefresh}, r.release(ctx, req.NamespacedName, false)
		}
		return ctrl.Result{}, r.release(ctx, req.NamespacedName, false)
	}
	if err := r.hold(ctx, req.NamespacedName, verdict); err != nil {
		return ctrl.Result{}, err
	}
	if r.Kind.SourceRef {
		return ctrl.Result{RequeueAfter: waitingRefresh}, nil
	}
	return ctrl.Result{}, nil
}

// verdict is what the gates say about an object.
type verdict struct {
	open bool
	// byRevision: a gate opened for one revision only decided; the source may move on, so the
	// object is looked at again (waitingRefresh).
	byRevision bool
	// heldBy is the value of HeldByAnnotation while closed; message is the Approved message.
	heldBy, message string
	// invalid is why the gates annotation does not parse.
	invalid error
}

// evaluate parses the annotation and reads the gates. A malformed annotation holds the object:
// the gates it was meant to wait on are unknown, and going ahead could break a freeze.
func (r *Reconciler) evaluate(ctx context.Context, meta *metav1.PartialObjectMetadata, value string) (verdict, error) {
	spec, err := gatesapi.ParseGatesAnnotation(value)
	if err != nil {
		return verdict{heldBy: gatesapi.InvalidGatesHolder, message: "Reconciliation is waiting approval, " + err.Error() + ".", invalid: err}, nil
	}
	res, err := gates.Evaluate(ctx, cachedGates{r.Client}, meta.GetNamespace(), spec)
	if err != nil {
		return verdict{}, err
	}
	byRevision := false
	if res.Open && res.RevisionScoped() && r.Kind.SourceRef {
		// A gate opened for one revision only (an approval): the object goes only when the
		// revision its source serves, and it has not applied, is that one.
		obj, err := r.get(ctx, client.ObjectKeyFromObject(meta))
		if err != nil {
			return verdict{}, client.IgnoreNotFound(err)
		}
		res, byRevision = res.ForRevision(r.waitingRevision(ctx, obj)), true
	}
	if res.Open {
		return verdict{open: true, byRevision: byRevision}, nil
	}
	var closed []string
	for _, g := range res.Closed() {
		closed = append(closed, g.Ref)
	}
	return verdict{heldBy: strings.Join(closed, ", "), message: res.ApprovalMessage()}, nil
}

// get reads the whole object from the API: the cache holds only metadata.
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind.GVK)
	if err := r.APIReader.Get(ctx, key, obj); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", r.Kind.GVK.Kind, key, err)
	}
	return obj, nil
}
