package receiver

import (
	"net/http"
	"strings"
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

// callerConfig is a connection to the controller's API server that carries the caller's token
// and nothing of the controller's: rest.AnonymousClientConfig keeps the host and the CA and drops
// every credential (client certificate, token, token file, auth provider) and impersonation. The
// controller's rate limiter is dropped as well, so that callers do not spend the controller's
// budget.
func callerConfig(base *rest.Config, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = token
	cfg.RateLimiter = nil
	cfg.Timeout = callerTimeout
	cfg.UserAgent = callerUserAgent
	return cfg
}
