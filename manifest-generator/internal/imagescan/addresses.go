package imagescan

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sluice-gitops/sluice/shared/egress"
)

// The flags of the manifest-generator that set an AddressPolicy: the names the
// resourceset-controller gives its own (docs/automation.md, Registries).
const (
	// AllowedCIDRsFlag allows ranges a registry would otherwise be refused.
	AllowedCIDRsFlag = "external-service-allowed-cidrs"
	// ServiceCIDRFlag gives the cluster's Service ranges, refused.
	ServiceCIDRFlag = "service-cidr"
)

// AddressPolicy says which addresses the registries of the automated releases may be at: the
// shared egress policy (shared/egress), set by AllowedCIDRsFlag and ServiceCIDRFlag. An image
// is named by a tenant (in a workload of its repository), so loopback, link-local and
// unspecified addresses and the Service range are refused unless allowed, checked on every
// address dialed (after DNS, on every redirect, token services included). Through a proxy
// (HTTPS_PROXY), the proxy's address is the one checked. The zero value refuses what is refused
// by default.
type AddressPolicy struct {
	// ServiceCIDRs are the cluster's Service ranges (--service-cidr); none when unknown.
	ServiceCIDRs []netip.Prefix
	// Allowed are ranges allowed although refused otherwise (--external-service-allowed-cidrs);
	// 0.0.0.0/0 and ::/0 allow everything.
	Allowed []netip.Prefix
}

// ParseCIDRs reads the values of AllowedCIDRsFlag and ServiceCIDRFlag.
var ParseCIDRs = egress.ParseCIDRs

// RefusedAddressError is a registry address the policy refuses; retrying cannot help until the
// image or the flags change.
type RefusedAddressError = egress.RefusedAddressError

func (p AddressPolicy) egress() *egress.Policy {
	return &egress.Policy{ServiceCIDRs: p.ServiceCIDRs, Allowed: p.Allowed, Flag: AllowedCIDRsFlag}
}

// guard is a copy of t whose every connection the policy checks: its dialer is replaced by
// http.DefaultTransport's with the check (a dialer of t's own would dial unchecked).
func (p AddressPolicy) guard(t *http.Transport) *http.Transport {
	g := t.Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.egress().Control}
	g.DialContext = dialer.DialContext
	// A TLS dialer of t's would dial unchecked, and so would the deprecated Dial.
	g.Dial, g.DialTLS, g.DialTLSContext = nil, nil, nil
	return g
}

// defaultTransport is go-containerregistry's transport, guarded by p.
// Transport is a transport that connects only to the addresses the policy allows, for the other
// requests the controller makes on a tenant's behalf (a forge's API for pull requests).
func (p AddressPolicy) Transport() *http.Transport { return p.defaultTransport() }

func (p AddressPolicy) defaultTransport() *http.Transport {
	t, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		t = http.DefaultTransport.(*http.Transport)
	}
	return p.guard(t)
}

// transport is the guarded transport for opts.Transport, kept per transport given, as the
// registry sessions are kept per transport.
func (s *Scanner) transport(t http.RoundTripper) (*http.Transport, error) {
	if t == nil {
		return s.plain, nil
	}
	ht, ok := t.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("imagescan: Options.Transport is a %T: only an *http.Transport is accepted, so that the address policy checks its connections", t)
	}
	if ht == nil {
		return s.plain, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.guarded[ht]; ok {
		return g, nil
	}
	if len(s.guarded) >= maxPullers {
		clear(s.guarded)
	}
	g := s.cfg.Addresses.guard(ht)
	s.guarded[ht] = g
	return g, nil
}
