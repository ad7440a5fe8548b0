package artifact

import (
	"net/url"
	"regexp"
	"strings"
)

// urlSignature is the first path segment of a signed artifact URL (the source-controller's
// `/<signature>/<kind>/<namespace>/<name>/<file>`): 22 characters of base64url, 128 bits.
var urlSignature = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// redactURL hides the signature of a signed artifact URL in the errors of a fetch: they reach
// conditions and events, which more people may read than the source object whose URL it is,
// and the signature is what lets one fetch the artifact.
func redactURL(err error, artifactURL string) error {
	if err == nil {
		return nil
	}
	u, perr := url.Parse(artifactURL)
	if perr != nil {
		return err
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !urlSignature.MatchString(first) {
		return err
	}
	return &redactedError{err: err, secret: first}
}

// redactedError is err with every occurrence of a secret replaced in its message; errors.Is and
// errors.As see err.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, "<signature>")
}

func (e *redactedError) Unwrap() error { return e.err }
