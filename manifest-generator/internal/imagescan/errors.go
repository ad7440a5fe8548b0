package imagescan

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The errors of a registry go into the ManifestGeneration's status, its events and the logs. A
// registry is named by a tenant and may answer anything: an error page quoting an internal
// service, a token response holding credentials. So what the registry sent is never repeated:
// an error answer keeps its status and the codes of its OCI error body (RegistryError), and any
// other error its first line, bounded.

// Bounds of what is kept of an error.
const (
	maxErrorCodes   = 4   // codes of an OCI error body
	maxErrorCodeLen = 40  // bytes of one code
	maxURLLen       = 256 // bytes of a request's URL
	maxReasonLen    = 256 // bytes of the first line of another error
)

// RegistryError is an error answer of a registry: the request, the HTTP status and the codes of
// the OCI error body ("UNAUTHORIZED", "NAME_UNKNOWN"), never its messages or details.
type RegistryError struct {
	// Method and URL are the request's; the URL is the first one of a redirected request,
	// without its query.
	Method, URL string
	StatusCode  int
	// Codes are the body's error codes that look like codes: upper case letters, digits and
	// underscores, at most maxErrorCodes of them.
	Codes []string
}

func (e *RegistryError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if len(e.Codes) > 0 {
		msg += " (" + strings.Join(e.Codes, ", ") + ")"
	}
	return msg
}

// newRegistryError keeps of terr what may be repeated.
func newRegistryError(terr *transport.Error) *RegistryError {
	e := &RegistryError{StatusCode: terr.StatusCode}
	if req := terr.Request; req != nil {
		// The request the caller made, not where a redirect led.
		for req.Response != nil && req.Response.Request != nil {
			req = req.Response.Request
		}
		e.Method = req.Method
		if req.URL != nil {
			e.URL = strippedURL(req.URL)
		}
	}
	for _, d := range terr.Errors {
		code := string(d.Code)
		if !isErrorCode(code) || len(e.Codes) >= maxErrorCodes {
			continue
		}
		seen := false
		for _, c := range e.Codes {
			seen = seen || c == code
		}
		if !seen {
			e.Codes = append(e.Codes, code)
		}
	}
	return e
}

// isErrorCode tells whether code looks like an OCI error code.
func isErrorCode(code string) bool {
	if code == "" || len(code) > maxErrorCodeLen {
		return false
	}
	for _, r := range code {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// strippedURL is u without credentials, query or fragment, bounded.
func strippedURL(u *url.URL) string {
	s := *u
	s.User, s.RawQuery, s.ForceQuery, s.Fragment, s.RawFragment = nil, "", false, "", ""
	return bounded(s.String(), maxURLLen)
}

// sanitize is err as it may be repeated: a refused address as it is, an error answer of a
// registry as a RegistryError, a failed request with its URL cut to the scheme and host (it may
// be where a redirect led) and its cause sanitized, anything else its first line, bounded.
func sanitize(err error) error {
	if err == nil {
		return nil
	}
	var refused *RefusedAddressError
	if errors.As(err, &refused) {
		return refused
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		return newRegistryError(terr)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		where := "(an unparsable URL)"
		if u, perr := url.Parse(uerr.URL); perr == nil {
			where = strippedURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
		}
		return &url.Error{Op: uerr.Op, URL: where, Err: sanitizeReason(uerr.Err)}
	}
	return sanitizeReason(err)
}

// sanitizeReason keeps the first line of err, bounded.
func sanitizeReason(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	line, _, _ := strings.Cut(msg, "\n")
	line = strings.TrimSpace(line)
	if line == msg {
		if len(line) <= maxReasonLen {
			return err
		}
	}
	return &reasonError{msg: bounded(strings.TrimSuffix(line, ":"), maxReasonLen), err: err}
}

// reasonError is the bounded message of err. err is kept for errors.Is (a context's end), never
// printed.
type reasonError struct {
	msg string
	err error
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.err }

// bounded cuts s to at most n bytes on a rune boundary, marking the cut.
func bounded(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
