package inputs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// HTTPClient is the client of an ExternalService provider. caPEM (the certSecretRef's ca.crt)
// is trusted in addition to the system's roots; TLS is 1.2 or newer. Without insecure the client
// refuses plain http:// requests, redirects included, so a credential never leaves in clear
// text; insecure allows them (spec.insecure), it never disables certificate checks. timeout
// bounds each request, none when zero.
func HTTPClient(caPEM []byte, insecure bool, timeout time.Duration) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	var rt http.RoundTripper = tr
	if !insecure {
		rt = httpsOnly{tr}
	}
	return &http.Client{Transport: rt, Timeout: timeout}, nil
}

// httpsOnly refuses requests that are not HTTPS.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain %s:// without spec.insecure", req.URL.Scheme)
	}
	return h.next.RoundTrip(req)
}
