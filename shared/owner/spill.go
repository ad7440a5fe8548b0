package owner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/inventory"
)

// InventoryLostReason is the Warning event of an inventory whose chunks are gone or altered.
const InventoryLostReason = "InventoryLost"

// inventoryRecord is one reconcile's view of an owner's inventory: the lifecycle reads and writes
// the whole list (fields), and the status gets it, or the chunks that hold it past the limit
// (shared/inventory), once, as the reconcile finishes.
type inventoryRecord struct {
	store *inventory.Store
	// raw are the kind's own fields, where the status lists entries or chunks.
	raw Fields
	// fields are raw with the whole inventory in place of the status's list.
	fields  Fields
	entries []apply.Entry
	// before is the status's list as read; changed says the inventory was set since.
	before  []apply.Entry
	changed bool
}

// inventoryStore is the lifecycle's store of spilled inventories.
func (l *Lifecycle[T]) inventoryStore() *inventory.Store {
	l.storeOnce.Do(func() {
		l.store = &inventory.Store{Client: l.Client, Reader: l.APIReader, Label: l.OwnerGroup + "/inventory-of", Limit: l.InventoryLimit}
	})
	return l.store
}

// Inventory is obj's whole inventory, read from the chunks its status lists when it spilled (once
// read, the chunks are remembered: their names are their digests).
func (l *Lifecycle[T]) Inventory(ctx context.Context, obj T) ([]apply.Entry, error) {
	return l.inventoryStore().Expand(ctx, obj, l.Kind.Fields(obj).Inventory())
}

// loadInventory reads obj's inventory. An inventory whose chunks are gone or altered is lost,
// said in a Warning event: what left the set since is not pruned, but nothing is pruned on the
// word of a chunk that is not the controller's.
func (l *Lifecycle[T]) loadInventory(ctx context.Context, obj T, raw Fields) (*inventoryRecord, error) {
	r := &inventoryRecord{store: l.inventoryStore(), raw: raw, before: raw.Inventory()}
	entries, err := r.store.Expand(ctx, obj, r.before)
	switch {
	case errors.Is(err, inventory.ErrUnreadable):
		l.EventRecorder.Eventf(obj, corev1.EventTypeWarning, InventoryLostReason,
			"the inventory is lost (%s): objects that left the set before this apply are not garbage collected", err)
		entries, r.changed = nil, true
	case err != nil:
		return nil, fmt.Errorf("reading the inventory: %w", err)
	}
	r.entries = entries
	r.fields = raw
	r.fields.Inventory = func() []apply.Entry { return r.entries }
	r.fields.SetInventory = func(e []apply.Entry) { r.entries, r.changed = e, true }
	return r, nil
}

// flush writes the inventory into the status, before the status is patched.
func (r *inventoryRecord) flush(ctx context.Context, obj client.Object) error {
	if !r.changed {
		return nil
	}
	refs, err := r.store.Spill(ctx, obj, r.entries)
	if err != nil {
		return fmt.Errorf("writing the inventory: %w", err)
	}
	if r.entries == nil && refs == nil {
		return nil
	}
	r.raw.SetInventory(refs)
	return nil
}

// collect deletes the chunks the status no longer lists, once that status is written (written: the
// patch succeeded), so that the API never holds a status naming a chunk that is gone.
func (r *inventoryRecord) collect(ctx context.Context, obj client.Object, written bool) {
	after := r.raw.Inventory()
	ns := obj.GetNamespace()
	if !written || !r.changed || slices.Equal(r.before, after) || !(inventory.Spilled(ns, r.before) || inventory.Spilled(ns, after)) {
		return
	}
	if err := r.store.Collect(ctx, obj, after); err != nil {
		log.FromContext(ctx).Error(err, "deleting the chunks of earlier inventories")
	}
}
