package gitwrite

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

var (
	// ErrRejected: the server refused the push for a reason other than a concurrent update (a
	// hook declined it, the branch is protected): retrying cannot help. The message carries the
	// server's reason and what the server printed.
	ErrRejected = errors.New("push rejected")
	// ErrBranchMoved: someone else pushed to the branch during every attempt.
	ErrBranchMoved = errors.New("the branch moved during every attempt")
)

// branchMoved recognises a push refused because the remote branch is no longer the commit the
// change was built on: go-git's own lease check ("non-fast-forward update: <ref>") when the
// advertised tip differs, and receive-pack's report when the ref moved after the advertisement
// (its lock check fails: "failed to update ref", older gits "failed to lock"), or a server that
// checks fast-forwards itself ("non-fast-forward", "fetch first").
func branchMoved(err error) bool {
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "failed to update ref", "failed to lock", "cannot lock ref"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// refused recognises go-git's errors for receive-pack's report-status: a ref update refused
// ("command error on <ref>: <reason>") or a pack the server would not take.
func refused(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "command error on ") || strings.HasPrefix(msg, "unpack error: ")
}

// progressLine matches the server's progress meters ("Resolving deltas: 100% (2/2), done."),
// which are not messages for the user.
var progressLine = regexp.MustCompile(`^[A-Za-z][A-Za-z ]*:\s+\d+% \(\d+/\d+\)`)

// serverMessages is what the server printed on the side band during the push (a hook's output
// among it), without progress meters, its lines joined with "; ", at most maxMessageBytes.
func serverMessages(out string) string {
	const maxMessageBytes = 2000
	var lines []string
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(l)
		if l == "" || progressLine.MatchString(l) {
			continue
		}
		lines = append(lines, l)
	}
	msg := strings.Join(lines, "; ")
	if len(msg) > maxMessageBytes {
		msg = msg[:maxMessageBytes] + "…"
	}
	return msg
}

// redactor hides the credentials of the options from error messages: the password of the URL's
// user info, the basic auth password and the bearer token. SSH keys never appear in go-git's
// messages.
type redactor []string

func newRedactor(o Options) redactor {
	var secrets []string
	if u, err := url.Parse(o.URL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	if o.Auth != nil {
		switch m := o.Auth.Method.(type) {
		case *githttp.BasicAuth:
			secrets = append(secrets, m.Password)
		case *githttp.TokenAuth:
			secrets = append(secrets, m.Token)
		}
	}
	var r redactor
	for _, s := range secrets {
		if s != "" {
			r = append(r, s)
		}
	}
	return r
}

// redact returns err unchanged when its message holds no secret, or else an error with the
// secrets replaced by "***" that still matches the sentinel errors of the original (errors.Is),
// without exposing the original through Unwrap.
func (r redactor) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range r {
		clean = strings.ReplaceAll(clean, s, "***")
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is lets errors.Is see the sentinels of the original error (gitauth.IsAuthError, ErrRejected).
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
