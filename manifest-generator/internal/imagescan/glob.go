package imagescan

import "strings"

// globMatch reports whether s matches pattern, in which "*" matches any run
// of characters and every other character itself. Leftmost matching of the
// parts between stars is enough: with no other wildcard, a later match of a
// part never leaves more room than the earliest one.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, last)
}
