package storage

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"path"
	"strings"
)

// Artifact URLs are capabilities: http://<adv-addr>/<mac>/<kind>/<namespace>/<name>/<file>, where
// <mac> is the HMAC-SHA256 of the object's directory "<kind>/<namespace>/<name>", truncated to
// 128 bits, base64url. Whoever may read the object reads the URL in its status, and with it every
// artifact of that object (its revisions and the latest.tar.gz link, which a GitRepository's
// status does not carry); nobody can make the URL of another object. The file name stays the
// last segment, as consumers expect, and Flux's consumers fetch the URL verbatim.

// macSize is the length of the truncated MAC in bytes: 128 bits, beyond guessing.
const macSize = 16

// macContext separates these MACs from anything else the keys could ever sign.
const macContext = "sluice artifact URL\n"

// urlKeys sign artifact URLs with the first key and verify them with all, so that a new key can
// verify before it signs, and an old one after it stopped signing.
type urlKeys [][]byte

// mac is the URL segment that opens the object directory dir with key.
func mac(key []byte, dir string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macContext))
	h.Write([]byte(dir))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:macSize])
}

// sign returns the URL path of the artifact at rel (a clean path relative to the storage root).
func (k urlKeys) sign(rel string) string {
	return "/" + mac(k[0], path.Dir(rel)) + "/" + rel
}

// verify takes a request name "<mac>/<kind>/<namespace>/<name>/<file>" and returns the artifact
// path it opens, "<kind>/<namespace>/<name>/<file>", when one of the keys made <mac> for that
// object's directory. Every key is compared in constant time, whether one matched or not.
func (k urlKeys) verify(name string) (string, bool) {
	got, rel, _ := strings.Cut(name, "/")
	if strings.Count(rel, "/") != 3 {
		return "", false
	}
	dir := path.Dir(rel)
	ok := false
	for _, key := range k {
		if hmac.Equal([]byte(got), []byte(mac(key, dir))) {
			ok = true
		}
	}
	return rel, ok
}
