// Package gitauth turns the data of a Kubernetes Secret into go-git credentials, the same way for
// every controller that talks to Git: the source-controller reading repositories and the
// manifest-generator pushing to them. Secrets keys follow Flux's GitRepository convention.
package gitauth

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrInvalidCredentials: the Secret does not hold usable credentials for the URL's scheme.
var ErrInvalidCredentials = errors.New("invalid credentials")

// Auth is how to reach a repository. A nil *Auth or a nil Method is anonymous.
type Auth struct {
	// Method is go-git's credential: HTTP basic or bearer, or an SSH key with a host key check.
	Method transport.AuthMethod
	// CABundle is the PEM bundle trusted for HTTPS, besides the system's roots.
	CABundle []byte
}

// AuthFromSecret builds the credentials for u from a Secret's data (nil data: anonymous). For
// http(s): `username`+`password` or `bearerToken`, and `ca.crt`. For ssh: `identity`,
// `known_hosts` (required: host keys are always checked) and an optional `password` for the key.
// tmpDir holds the known_hosts file the SSH host key callback reads; it must outlive the use of
// the returned Auth.
func AuthFromSecret(u *url.URL, data map[string][]byte, tmpDir string) (*Auth, error) {
	auth := &Auth{}
	switch u.Scheme {
	case "http", "https":
		auth.CABundle = data["ca.crt"]
		switch {
		case len(data["bearerToken"]) > 0:
			auth.Method = &githttp.TokenAuth{Token: string(data["bearerToken"])}
		case len(data["username"]) > 0 || len(data["password"]) > 0:
			auth.Method = &githttp.BasicAuth{Username: string(data["username"]), Password: string(data["password"])}
		}
		return auth, nil
	case "ssh":
		user := "git"
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		if len(data["identity"]) == 0 {
			return nil, fmt.Errorf("%w: ssh needs the 'identity' key (a private key) in the Secret", ErrInvalidCredentials)
		}
		if len(data["known_hosts"]) == 0 {
			return nil, fmt.Errorf("%w: ssh needs the 'known_hosts' key in the Secret", ErrInvalidCredentials)
		}
		keys, err := gitssh.NewPublicKeys(user, data["identity"], string(data["password"]))
		if err != nil {
			return nil, fmt.Errorf("%w: 'identity' is not a usable private key: %v", ErrInvalidCredentials, err)
		}
		callback, err := hostKeyCallback(data["known_hosts"], tmpDir)
		if err != nil {
			return nil, err
		}
		keys.HostKeyCallback = callback
		auth.Method = keys
		return auth, nil
	}
	return nil, fmt.Errorf("unsupported URL scheme '%s'", u.Scheme)
}

// hostKeyCallback checks host keys against known_hosts; knownhosts reads files only, so the
// Secret's lines go to a file of the caller's temp dir.
func hostKeyCallback(knownHosts []byte, tmpDir string) (ssh.HostKeyCallback, error) {
	path := filepath.Join(tmpDir, "known_hosts")
	if err := os.WriteFile(path, knownHosts, 0o600); err != nil {
		return nil, err
	}
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("%w: 'known_hosts' does not parse: %v", ErrInvalidCredentials, err)
	}
	return cb, nil
}
