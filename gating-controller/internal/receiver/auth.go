package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// signatureHeader carries the HMAC-SHA256 of the body, keyed with the token, as Flux's
// generic-hmac receivers take it: `X-Signature: sha256=<hex>`.
const signatureHeader = "X-Signature"

// authenticated tells whether the request carries the token, either as a bearer token or as the
// key of the body's signature. Both comparisons take constant time: a bearer token is compared
// through its SHA-256 so that not even its length leaks.
func authenticated(r *http.Request, body, token []byte) bool {
	if len(token) == 0 {
		return false
	}
	if sig := r.Header.Get(signatureHeader); sig != "" {
		return validSignature(sig, body, token)
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" {
		return false
	}
	given, want := sha256.Sum256([]byte(strings.TrimSpace(bearer))), sha256.Sum256(token)
	return subtle.ConstantTimeCompare(given[:], want[:]) == 1
}

// validSignature checks `sha256=<hex of HMAC-SHA256(token, body)>`.
func validSignature(header string, body, token []byte) bool {
	algo, hexSum, ok := strings.Cut(header, "=")
	if !ok || algo != "sha256" {
		return false
	}
	given, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, token)
	mac.Write(body)
	return hmac.Equal(given, mac.Sum(nil))
}
