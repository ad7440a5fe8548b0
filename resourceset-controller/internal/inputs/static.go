package inputs

import "maps"

// Static is the one input of a Static provider: its default values, with an id that is a hash
// of them unless they set one, so the id changes exactly when the values do.
func Static(defaultValues map[string]any) []map[string]any {
	in := maps.Clone(defaultValues)
	if in == nil {
		in = map[string]any{}
	}
	if _, ok := in[IDKey]; !ok {
		in[IDKey] = shortHash(canonicalJSON(defaultValues))
	}
	return []map[string]any{in}
}
