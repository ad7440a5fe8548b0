package inputs

import (
	"crypto/sha256"
	"encoding/hex"
)

// Before it took flux-operator's ids (ID), Sluice gave inputs the first 12 hex characters of
// the SHA-256 of the same strings. Objects named after those ids exist in clusters; the
// functions here let a provider keep the id an input had, so that an upgrade renames nothing.

// LegacyID is the id Sluice gave an input made from s before it took flux-operator's.
func LegacyID(s string) string { return legacyHash([]byte(s)) }

// LegacyStaticID is the id Sluice gave the input of a Static provider before it took
// flux-operator's (ID of the provider's UID): the input's own id when its values set one, else
// the legacy hash of the values' JSON.
func LegacyStaticID(defaultValues map[string]any) string {
	if id, ok := defaultValues[IDKey].(string); ok {
		return id
	}
	return legacyHash(canonicalJSON(defaultValues))
}

func legacyHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// KeepLegacyIDs gives each input the legacy id legacyOf returns for it ("" for none) when the
// provider's previous export holds that id: the input existed before the change of ids, and
// objects may be named after it. Inputs that are new get the new ids. It reports how many
// inputs kept their legacy id.
func KeepLegacyIDs(list, previous []map[string]any, legacyOf func(map[string]any) string) int {
	old := map[string]bool{}
	for _, in := range previous {
		if id, ok := in[IDKey].(string); ok {
			old[id] = true
		}
	}
	if len(old) == 0 {
		return 0
	}
	kept := 0
	for _, in := range list {
		if id := legacyOf(in); id != "" && old[id] {
			in[IDKey] = id
			kept++
		}
	}
	return kept
}
