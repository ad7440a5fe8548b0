package inputs

import (
	"crypto/sha256"
	"encoding/hex"
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
