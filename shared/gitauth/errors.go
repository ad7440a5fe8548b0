package gitauth

import (
	"errors"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// IsAuthError tells credential failures from other Git failures: the server refused or asked
// for credentials (go-git's transport errors), the Secret's credentials are unusable
// (ErrInvalidCredentials), or the SSH handshake refused the key or the host key, which
// golang.org/x/crypto/ssh reports only as text.
func IsAuthError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, ErrInvalidCredentials) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "knownhosts: key mismatch") ||
		strings.Contains(msg, "knownhosts: key is unknown")
}
