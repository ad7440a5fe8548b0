package notify

import (
	"net/netip"
	"syscall"

	"github.com/sluice-gitops/sluice/shared/egress"
)

// The flags of the gating-controller that set an AddressPolicy. They mean what the
// resourceset-controller's --external-service-allowed-cidrs and --service-cidr mean for its
// ExternalServices.
const (
	// AllowedCIDRsFlag allows ranges a notification would otherwise be refused.
	AllowedCIDRsFlag = "notification-allowed-cidrs"
	// ServiceCIDRFlag gives the cluster's Service ranges, refused.
	ServiceCIDRFlag = "service-cidr"
)

// AddressPolicy says which addresses a notification may be posted to: the shared egress policy
// (shared/egress), set by AllowedCIDRsFlag and ServiceCIDRFlag. A webhook's URL is written by a
// tenant (in a Secret): loopback, link-local, unspecified addresses and the Service range are
// refused unless allowed.
type AddressPolicy struct {
	// ServiceCIDRs are the cluster's Service ranges (--service-cidr); none when unknown.
	ServiceCIDRs []netip.Prefix
	// Allowed are ranges allowed although refused otherwise (--notification-allowed-cidrs);
	// 0.0.0.0/0 and ::/0 allow everything.
	Allowed []netip.Prefix
}

func (p *AddressPolicy) egress() *egress.Policy {
	return &egress.Policy{ServiceCIDRs: p.ServiceCIDRs, Allowed: p.Allowed, Flag: AllowedCIDRsFlag, Doing: "posts to"}
}

// Check returns a *RefusedAddressError when addr may not be posted to.
func (p *AddressPolicy) Check(addr netip.Addr) error { return p.egress().Check(addr) }

// control is the net.Dialer Control of the delivery client.
func (p *AddressPolicy) control(network, address string, c syscall.RawConn) error {
	return p.egress().Control(network, address, c)
}

// RefusedAddressError is an address a notification may not be posted to.
type RefusedAddressError = egress.RefusedAddressError

// ParseCIDRs reads the values of AllowedCIDRsFlag and ServiceCIDRFlag.
var ParseCIDRs = egress.ParseCIDRs
