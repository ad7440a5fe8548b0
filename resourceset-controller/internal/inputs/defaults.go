package inputs

// WithDefaults gives every input the default values (a provider's spec.defaultValues) for the
// keys it does not set itself. The inputs are copied, not changed.
func WithDefaults(inputs []map[string]any, defaults map[string]any) []map[string]any {
	out := make([]map[string]any, len(inputs))
	for i, in := range inputs {
		m := make(map[string]any, len(defaults)+len(in))
		for k, v := range defaults {
			m[k] = v
		}
		for k, v := range in {
			m[k] = v
		}
		out[i] = m
	}
	return out
}
