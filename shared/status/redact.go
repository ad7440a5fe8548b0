package status

import "regexp"

var (
	// userPassword is the password of a URL's user information, any scheme.
	userPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*):[^/\s@]+@`)
	// httpUser is the user of an http(s) URL without a password: often a token
	// (https://<token>@github.com/...).
	httpUser = regexp.MustCompile(`(https?://)[^/\s:@]+@`)
)

// Redact hides the credentials of the URLs in s: the password of any URL (user:xxxxx@, as
// url.URL.Redacted shows it), and the user of an http(s) URL, which is often a token
// (xxxxx@). Messages built from a spec's URL or from a library's error go through it before they
// reach a condition, an event or a log.
func Redact(s string) string {
	s = userPassword.ReplaceAllString(s, "${1}:xxxxx@")
	return httpUser.ReplaceAllString(s, "${1}xxxxx@")
}

// redactedError is an error whose text is redacted, wrapping the original (errors.Is and As see
// through it, so a terminal error stays terminal).
type redactedError struct{ err error }

func (e *redactedError) Error() string { return Redact(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

// redacted wraps err so that its text, wherever it is logged, is redacted.
func redacted(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err}
}
