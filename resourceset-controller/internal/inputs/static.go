package inputs

import "maps"

// Static is the one input of a Static provider: its default values with the id given, which
// replaces an id of the values, as flux-operator's does (the controller gives ID of the
// provider's UID, `kubectl resourceset build` ID of its name).
func Static(defaultValues map[string]any, id string) []map[string]any {
	in := maps.Clone(defaultValues)
	if in == nil {
		in = map[string]any{}
	}
	in[IDKey] = id
	return []map[string]any{in}
}
