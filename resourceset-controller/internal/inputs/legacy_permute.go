package inputs

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// LegacyPermuteIDs gives each combination of Combine's Permute the id Sluice gave it before it
// took flux-operator's: the legacy hash of, for every part, the key the part went under and the
// part's own id (or its content when it has none), the ResourceSet's inputs first under the key
// "" and the providers in name order under their legacy key. A ResourceSet whose objects are
// named after those ids keeps them (the controller decides, from what it applied).
func LegacyPermuteIDs(combinations []map[string]any, own Group, providers []Group) {
	type dim struct{ key, oldKey string }
	var dims []dim
	if len(own.Inputs) > 0 {
		dims = append(dims, dim{key: NormalizeKeyForTemplate(own.Name)})
	}
	sorted := slices.Clone(providers)
	slices.SortStableFunc(sorted, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		dims = append(dims, dim{key: NormalizeKeyForTemplate(p.Name), oldKey: legacyKey(p.Name)})
	}
	for _, c := range combinations {
		var seed []byte
		for _, d := range dims {
			part, ok := c[d.key].(map[string]any)
			if !ok {
				continue // a source left out of the product
			}
			seed = append(seed, d.oldKey...)
			seed = append(seed, 0)
			seed = append(seed, legacyPartKey(part)...)
			seed = append(seed, 0)
		}
		c[IDKey] = legacyHash(seed)
	}
}

// legacyPartKey identified a part of a combination: its id when it has one, else its content
// (without the source Combine adds now).
func legacyPartKey(part map[string]any) []byte {
	if id, ok := part[IDKey]; ok && id != nil {
		return canonicalJSON(id)
	}
	without := maps.Clone(part)
	delete(without, ProviderKey)
	return canonicalJSON(without)
}

// legacyKey is the key Sluice nested a provider's inputs under before NormalizeKeyForTemplate:
// the name in lower case with every character other than a-z, 0-9 and _ replaced by _.
func legacyKey(name string) string {
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			return r
		}
		return '_'
	}, strings.ToLower(name))
}
