// Package ociregistry is the OCI distribution registry of the tests, without the rest of
// testserver: go-containerregistry's pkg/registry in process, behind HTTP basic auth when asked.
// It has few dependencies, so that the tests built with the race detector (slow to build) can
// use a real registry without building testserver's Git, Helm and S3 servers.
package ociregistry

import (
	"crypto/subtle"
	"io"
	"log"
	"net/http"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Handler serves a new, empty registry; with a username, every request must carry those basic
// credentials.
//
// The challenge is `Basic realm="registry"`, which both clients the tests use follow without a
// token service: ORAS (Helm's registry client) retries a 401 with basic credentials when the
// challenge's scheme is Basic, and go-containerregistry's remote pings /v2/, reads the scheme and
// sends basic credentials on every later request. Docker's token flow (Bearer challenge plus a
// token endpoint) is not needed for either.
func Handler(username, password string) http.Handler {
	// The registry logs every request, and ORAS probes blobs with HEADs that are answered 404
	// by design: too much noise for a test log. Failures surface in the clients' errors.
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if username == "" {
		return h
	}
	return &basicAuth{next: h, username: username, password: password}
}

type basicAuth struct {
	next               http.Handler
	username, password string
}

func (a *basicAuth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	user, pass, ok := req.BasicAuth()
	if !ok || !equal(user, a.username) || !equal(pass, a.password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// The distribution spec's error body, which clients quote in their errors.
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`+"\n")
		return
	}
	a.next.ServeHTTP(w, req)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
