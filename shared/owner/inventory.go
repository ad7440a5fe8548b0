package owner

import "github.com/sluice-gitops/sluice/shared/apply"

// Ref is the inventory entry of the owners' API types, `{id, v}`; each API group has its own
// type of this shape.
type Ref interface {
	~struct {
		ID      string `json:"id"`
		Version string `json:"v"`
	}
}

// Entries is a status inventory in the applier's terms.
func Entries[R Ref](refs []R) []apply.Entry {
	if refs == nil {
		return nil
	}
	out := make([]apply.Entry, len(refs))
	for i, r := range refs {
		out[i] = apply.Entry(r)
	}
	return out
}

// Refs is the status inventory of applier entries.
func Refs[R Ref](entries []apply.Entry) []R {
	out := make([]R, len(entries))
	for i, e := range entries {
		out[i] = R(e)
	}
	return out
}

// Inventory is the status inventory type of the owners' API groups, `{entries: [{id, v}]}`.
type Inventory[R Ref] interface {
	~struct {
		Entries []R `json:"entries"`
	}
}

// StatusFields are the Fields of an owner's status that holds the usual fields: its
// observedGeneration, lastAppliedRevision and inventory (nil until something was applied).
func StatusFields[I Inventory[R], R Ref](observedGeneration *int64, lastAppliedRevision *string, inventory **I) Fields {
	return Fields{
		ObservedGeneration: observedGeneration, LastAppliedRevision: lastAppliedRevision,
		Inventory: func() []apply.Entry {
			if *inventory == nil {
				return nil
			}
			return Entries(struct {
				Entries []R `json:"entries"`
			}(**inventory).Entries)
		},
		SetInventory: func(e []apply.Entry) {
			inv := I(struct {
				Entries []R `json:"entries"`
			}{Entries: Refs[R](e)})
			*inventory = &inv
		},
	}
}
