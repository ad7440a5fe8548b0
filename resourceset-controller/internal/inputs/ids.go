package inputs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// idLength is the number of hex characters of a generated id: 48 bits keep ids unique among
// the 10,000 combinations a ResourceSet may have (a collision chance below one in a million)
// while staying short enough for object names and label values.
const idLength = 12

// IDKey is the name of the input field that identifies an input.
const IDKey = "id"

// shortHash is the first idLength hex characters of the SHA-256 of data: lowercase hex, so it
// is valid in names and label values.
func shortHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:idLength]
}

// canonicalJSON is the JSON of v with map keys sorted (encoding/json sorts them), so equal
// values give equal bytes. Values that JSON cannot encode (only possible for inputs not built
// from JSON) fall back to their Go syntax, which also prints maps sorted.
func canonicalJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(nil, "%#v", v)
	}
	return b
}

// partKey identifies an input within a combination: its id when it has one, else its whole
// content.
func partKey(input map[string]any) []byte {
	if id, ok := input[IDKey]; ok && id != nil {
		return canonicalJSON(id)
	}
	return canonicalJSON(input)
}

// ShortID is the id of a named thing (a tag, a branch): the short hash of its name.
func ShortID(name string) string { return shortHash([]byte(name)) }
