package inputs

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// HTTPClient is the client of an ExternalService provider. tlsConfig is that of the
// certSecretRef (shared/secrets.TLSConfig: its ca.crt is trusted in addition to the system's
// roots); nil is the system's roots. Without insecure the client
// refuses plain http:// requests, redirects included, so a credential never leaves in clear
// text; insecure allows them (spec.insecure), it never disables certificate checks. timeout
// bounds each request, none when zero. addresses refuses, at each connection, the addresses it
// does not allow; nil checks none (for the registries of OCIArtifactTag, which go through their
// own client). Through a proxy (HTTPS_PROXY), the proxy's address is the one checked.
func HTTPClient(tlsConfig *tls.Config, insecure bool, timeout time.Duration, addresses *AddressPolicy) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig
	}
	if addresses != nil {
		// http.DefaultTransport's dialer, with the check.
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: addresses.control}
		tr.DialContext = dialer.DialContext
	}
	var rt http.RoundTripper = tr
	if !insecure {
		rt = httpsOnly{tr}
	}
	return &http.Client{Transport: rt, Timeout: timeout}
}

// errPlainHTTP is the error of a request httpsOnly refuses.
var errPlainHTTP = errors.New("refusing plain http:// without spec.insecure")

// httpsOnly refuses requests that are not HTTPS.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errPlainHTTP
	}
	return h.next.RoundTrip(req)
}
