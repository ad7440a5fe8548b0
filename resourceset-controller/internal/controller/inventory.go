package controller

import (
	"github.com/sluice-gitops/sluice/shared/apply"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// entries is the inventory of the status in the applier's terms.
func entries(inv *rsv1.ResourceInventory) []apply.Entry {
	if inv == nil {
		return nil
	}
	out := make([]apply.Entry, len(inv.Entries))
	for i, e := range inv.Entries {
		out[i] = apply.Entry{ID: e.ID, Version: e.Version}
	}
	return out
}

// inventoryOf is the status inventory of applier entries (the seed's format).
func inventoryOf(entries []apply.Entry) *rsv1.ResourceInventory {
	inv := &rsv1.ResourceInventory{Entries: make([]rsv1.ResourceRef, len(entries))}
	for i, e := range entries {
		inv.Entries[i] = rsv1.ResourceRef{ID: e.ID, Version: e.Version}
	}
	return inv
}
