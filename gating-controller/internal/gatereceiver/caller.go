package gatereceiver

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// callerTimeout bounds each call made with a caller's token, well within the server's 30
// seconds for the whole request.
const callerTimeout = 10 * time.Second

// callerUserAgent names the receiver in the API server's audit log, next to the caller's name.
const callerUserAgent = "sluice-gating-controller/receiver"

// bearerToken is the token of `Authorization: Bearer <token>`, or "" when there is none: a
// response is made only with the caller's own credentials, never anonymously.
func bearerToken(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

// callerConn is the connection to the controller's API server that callers' requests share,
// without any credential: rest.AnonymousClientConfig keeps the host, the CA and the dialer, and
// drops the client certificate, the token, the token file, the auth provider and impersonation.
// One transport for all callers keeps their TLS connections pooled, and no per-token state
// behind.
type callerConn struct {
	base *rest.Config
	once sync.Once
	anon *rest.Config
	rt   http.RoundTripper
	err  error
}

// config is a config that carries the caller's token and nothing of the controller's. The
// controller's rate limiter is not shared, so that callers do not spend the controller's budget.
func (c *callerConn) config(token string) (*rest.Config, error) {
	c.once.Do(func() {
		c.anon = rest.AnonymousClientConfig(c.base)
		c.rt, c.err = rest.TransportFor(c.anon)
	})
	if c.err != nil {
		return nil, c.err
	}
	cfg := &rest.Config{
		Host:          c.anon.Host,
		APIPath:       c.anon.APIPath,
		ContentConfig: c.anon.ContentConfig,
		// The TLS settings are in the shared transport; client-go wraps it with the token.
		Transport:   c.rt,
		BearerToken: token,
		Timeout:     callerTimeout,
		UserAgent:   callerUserAgent,
	}
	return cfg, nil
}
