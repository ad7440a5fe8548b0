package inputs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Revision is "sha256:<hex>" of the canonical JSON of the inputs, so equal inputs give equal
// revisions whatever the order of their keys (status.lastExportedRevision, and the trigger of
// the ResourceSets that use a provider). No inputs and nil give the same revision.
func Revision(inputs []map[string]any) string {
	if inputs == nil {
		inputs = []map[string]any{}
	}
	sum := sha256.Sum256(canonicalJSON(inputs))
	return "sha256:" + hex.EncodeToString(sum[:])
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
