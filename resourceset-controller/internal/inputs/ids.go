package inputs

import (
	"hash/adler32"
	"strconv"
)

// IDKey is the name of the input field that identifies an input.
const IDKey = "id"

// ID is the id of an input made from s (a branch or tag name, a provider's UID, an artifact's
// `<namespace>/<name>`, the indexes of a Permute combination): the decimal Adler-32 checksum of
// s, the ids flux-operator gives, so that objects named after `<< inputs.id >>` keep their names
// when a ResourceSet moves between flux-operator and Sluice. Adler-32 is no hash for security:
// ids only name objects, and two inputs of one provider come from different strings.
func ID(s string) string {
	return strconv.FormatUint(uint64(adler32.Checksum([]byte(s))), 10)
}
