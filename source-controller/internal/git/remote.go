package git

import (
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/sluice-gitops/sluice/shared/gitauth"
)

// Remote is a repository and how to reach it: its URL, credentials and proxy.
type Remote struct {
	URL  string
	Auth *gitauth.Auth
	// Proxy carries HTTP(S) remotes through an HTTP(S) or SOCKS5 proxy and SSH remotes through
	// a SOCKS5 one; an empty URL is no proxy but the environment's (HTTPS_PROXY, NO_PROXY).
	Proxy transport.ProxyOptions
}

// WithURL is the same access to another repository: a submodule is fetched with the
// credentials and proxy of its parent.
func (r Remote) WithURL(url string) Remote {
	r.URL = url
	return r
}
