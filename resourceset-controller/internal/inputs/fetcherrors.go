package inputs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
)

// fetchError says why a GET of u failed without quoting the server: net/http's errors carry
// bytes of what it sent ("malformed HTTP response \"SSH-2.0-OpenSSH_9.6\""), the location it
// redirected to, or the names of its certificate, and the status of a provider would otherwise
// tell a tenant what runs at an address. Only errors made before anything was read from the
// server keep their text: a refused address or scheme, the context's, a failed dial.
func fetchError(u *neturl.URL, err error) error {
	prefix := "GET " + u.Redacted()
	var refused *RefusedAddressError
	var op *net.OpError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verification *tls.CertificateVerificationError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("%s: %w", prefix, refused)
	case errors.Is(err, errPlainHTTP):
		return fmt.Errorf("%s: %w", prefix, errPlainHTTP)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", prefix, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", prefix, context.DeadlineExceeded)
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("%s: %w", prefix, op)
	case errors.As(err, &hostname):
		return fmt.Errorf("%s: the server's certificate is not valid for %s", prefix, u.Hostname())
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%s: the server's certificate is not signed by a trusted authority (a private CA goes in spec.certSecretRef)", prefix)
	case errors.As(err, &invalid), errors.As(err, &verification):
		return fmt.Errorf("%s: the server's certificate is not valid", prefix)
	case errors.As(err, &timeout) && timeout.Timeout():
		return fmt.Errorf("%s: timed out", prefix)
	}
	return fmt.Errorf("%s: the exchange with the server failed (not an HTTP response, or a broken connection)", prefix)
}
