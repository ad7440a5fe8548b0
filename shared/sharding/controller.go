package sharding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ShardLabel names, on each object, the replica that reconciles it: `kubectl get -l` selects a
// shard's objects, and the kinds' wide output shows it.
const ShardLabel = "sharding.sluice.dev/shard"

// Kind is what a controller tells of the kind it reconciles, for Complete.
type Kind struct {
	// NewList returns an empty list of the kind, to find the objects a replica takes over.
	NewList func() client.ObjectList
	// NewObject returns an empty object of the kind, to read and label one; nil for a kind
	// that is not the controller's own (Flux's), whose objects are left unlabelled.
	NewObject func() client.Object
}

// Complete builds the controller b with r. Without shards (nil), that is all. With them, r
// reconciles only the objects this replica owns, and only once every replica acknowledged the
// current assignment (Begin); the objects it takes over are enqueued when an assignment
// settles (Source); and each object carries ShardLabel before r reconciles it here. c is the
// manager's client.
func Complete(b *builder.Builder, s *Shards, c client.Client, kind Kind, r reconcile.Reconciler) error {
	_, err := Build(b, s, c, kind, r)
	return err
}

// Build is Complete, returning the controller.
func Build(b *builder.Builder, s *Shards, c client.Client, kind Kind, r reconcile.Reconciler) (controller.Controller, error) {
	if s == nil {
		return b.Build(r)
	}
	return b.WatchesRawSource(s.Source(c, kind.NewList)).Build(&gated{shards: s, client: c, kind: kind, next: r})
}

// gated is a reconciler behind the shards.
type gated struct {
	shards *Shards
	client client.Client
	kind   Kind
	next   reconcile.Reconciler
}

func (g *gated) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Another replica's object, or the replicas are changing: its owner reconciles it, and a
	// new owner is sent it once the change settled.
	done, ok := g.shards.Begin(req.String())
	if !ok {
		return ctrl.Result{}, nil
	}
	defer done()
	if err := g.label(ctx, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	}
	return g.next.Reconcile(ctx, req)
}

// label sets ShardLabel to this replica on the object, unless it says so already: one write
// per object and move.
func (g *gated) label(ctx context.Context, key types.NamespacedName) error {
	if g.kind.NewObject == nil {
		return nil
	}
	obj := g.kind.NewObject()
	if err := g.client.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	id := g.shards.opts.Identity
	if !obj.GetDeletionTimestamp().IsZero() || obj.GetLabels()[ShardLabel] == id {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, ShardLabel, id)
	if err := g.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(g.shards.opts.Controller)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("labelling %s with its shard: %w", key, err))
	}
	return nil
}

// Identity is this replica's identity among the shards.
func (s *Shards) Identity() string { return s.opts.Identity }

// FieldOwner is the field manager a controller writes statuses as: its name alone without
// shards, and with them its name and the replica's identity, so that an object's managed fields
// tell which replica wrote its status.
func FieldOwner(controller string, s *Shards) string {
	if s == nil {
		return controller
	}
	return controller + "@" + s.opts.Identity
}

// Own is the Kind of a controller's own kind O, listed as L: e.g. Own[v1.Gate, v1.GateList]().
func Own[O, L any, PO interface {
	*O
	client.Object
}, PL interface {
	*L
	client.ObjectList
}]() Kind {
	return Kind{
		NewList:   func() client.ObjectList { return PL(new(L)) },
		NewObject: func() client.Object { return PO(new(O)) },
	}
}
