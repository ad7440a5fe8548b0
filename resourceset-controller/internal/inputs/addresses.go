package inputs

import (
	"net/netip"
	"syscall"

	"github.com/sluice-gitops/sluice/shared/egress"
)

// The flags of the resourceset-controller that set an AddressPolicy.
const (
	// AllowedCIDRsFlag allows ranges an ExternalService or a forge would otherwise be refused.
	AllowedCIDRsFlag = "external-service-allowed-cidrs"
	// ServiceCIDRFlag gives the cluster's Service ranges, refused.
	ServiceCIDRFlag = "service-cidr"
)

// AddressPolicy says which addresses an ExternalService or a forge provider may connect to: the
// shared egress policy (shared/egress), set by AllowedCIDRsFlag and ServiceCIDRFlag.
type AddressPolicy struct {
	// ServiceCIDRs are the cluster's Service ranges (--service-cidr); none when unknown.
	ServiceCIDRs []netip.Prefix
	// Allowed are ranges allowed although refused otherwise (--external-service-allowed-cidrs),
	// e.g. 0.0.0.0/0 and ::/0 allow everything.
	Allowed []netip.Prefix
}

// control is the net.Dialer Control of a provider's client.
func (p *AddressPolicy) control(network, address string, c syscall.RawConn) error {
	policy := egress.Policy{ServiceCIDRs: p.ServiceCIDRs, Allowed: p.Allowed, Flag: AllowedCIDRsFlag}
	return policy.Control(network, address, c)
}

// RefusedAddressError is an address a provider may not connect to; it is terminal.
type RefusedAddressError = egress.RefusedAddressError

// ParseCIDRs reads the values of AllowedCIDRsFlag and ServiceCIDRFlag.
var ParseCIDRs = egress.ParseCIDRs
