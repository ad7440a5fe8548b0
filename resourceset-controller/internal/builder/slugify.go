package builder

import "strings"

// maxLabelValue is the length limit of a Kubernetes label value.
const maxLabelValue = 63

// slugify normalises s into a valid Kubernetes label value (and DNS label):
// lowercase, every run of characters outside [a-z0-9] replaced by one '-',
// no '-' at either end, at most 63 characters.
func slugify(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > maxLabelValue {
		// Only ASCII is left, so cutting bytes cuts characters.
		out = strings.TrimRight(out[:maxLabelValue], "-")
	}
	return out
}
