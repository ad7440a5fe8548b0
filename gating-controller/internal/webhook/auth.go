package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // Flux's generic-hmac, GitHub's X-Hub-Signature and Nexus sign with HMAC-SHA1.
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"slices"
	"strings"
)

// EqualToken compares a token a caller sent with the expected one in constant time, through their
// SHA-256 digests, so that not even the token's length leaks. An empty expected token never
// matches.
func EqualToken(given, token []byte) bool {
	if len(token) == 0 {
		return false
	}
	g, w := sha256.Sum256(given), sha256.Sum256(token)
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// hashes are the HMAC hash functions a signature header may name.
var hashes = map[string]func() hash.Hash{"sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New}

// ValidHMAC checks that hexSum is the hex HMAC of body keyed with key, with the hash function
// named algo (sha1, sha256 or sha512); the comparison takes constant time (hmac.Equal).
func ValidHMAC(algo, hexSum string, body, key []byte) bool {
	newHash, ok := hashes[algo]
	if !ok || len(key) == 0 {
		return false
	}
	given, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(newHash, key)
	mac.Write(body)
	return hmac.Equal(given, mac.Sum(nil))
}

// ValidPrefixedHMAC checks a signature header of the form `<algo>=<hex>` (`sha256=9f86...`), as
// GitHub, Bitbucket Server and Flux's generic-hmac send it, taking only the algorithms allowed.
func ValidPrefixedHMAC(header string, body, key []byte, allowed ...string) bool {
	algo, hexSum, ok := strings.Cut(strings.TrimSpace(header), "=")
	if !ok || !slices.Contains(allowed, algo) {
		return false
	}
	return ValidHMAC(algo, hexSum, body, key)
}
