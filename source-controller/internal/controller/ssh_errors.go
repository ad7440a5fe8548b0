package controller

import "strings"

// isSSHAuthError recognises the SSH handshake's refusal of the key or the host key, which
// golang.org/x/crypto/ssh reports only as text.
func isSSHAuthError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "knownhosts: key mismatch") ||
		strings.Contains(msg, "knownhosts: key is unknown")
}
