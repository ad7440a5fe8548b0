package notify

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
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

// AddressPolicy says which addresses a notification may be posted to. Its URL is written by a
// tenant (in a Secret), and the controller would otherwise post from inside the cluster to its
// own ports on loopback, to the cloud's metadata service on a link-local address, or to the
// cluster's Services. These are refused unless Allowed holds them. The check is made on each
// address dialed, after DNS and on every redirect, so neither a host name resolving to a refused
// address nor a redirect to one gets through.
type AddressPolicy struct {
	// ServiceCIDRs are the cluster's Service ranges (--service-cidr); none when unknown.
	ServiceCIDRs []netip.Prefix
	// Allowed are ranges allowed although refused otherwise (--notification-allowed-cidrs);
	// 0.0.0.0/0 and ::/0 allow everything.
	Allowed []netip.Prefix
}

// thisNetwork is 0.0.0.0/8: Linux connects 0.0.0.0 to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// Check returns a *RefusedAddressError when addr may not be posted to.
func (p *AddressPolicy) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	if why := p.refusal(addr); why != "" {
		return &RefusedAddressError{Addr: addr, Why: why}
	}
	return nil
}

func (p *AddressPolicy) refusal(addr netip.Addr) string {
	for _, allowed := range p.Allowed {
		if allowed.Contains(addr) {
			return ""
		}
	}
	switch {
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		return "a link-local address (cloud metadata services are there)"
	case addr.IsUnspecified() || thisNetwork.Contains(addr):
		return "an unspecified address"
	}
	for _, service := range p.ServiceCIDRs {
		if service.Contains(addr) {
			return fmt.Sprintf("in the cluster's Service range %s", service)
		}
	}
	return ""
}

// control is the net.Dialer Control of the delivery client: it runs before each connection, with
// the address resolved.
func (p *AddressPolicy) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("refusing to connect to %q: not an IP address", host)
	}
	return p.Check(addr)
}

// RefusedAddressError is an address a notification may not be posted to. Retrying cannot help
// until the address or the controller's flags change.
type RefusedAddressError struct {
	Addr netip.Addr
	// Why says what kind of address it is: "a loopback address".
	Why string
}

func (e *RefusedAddressError) Error() string {
	bits := 32
	if e.Addr.Is6() {
		bits = 128
	}
	return fmt.Sprintf("refusing to connect to %s, %s: the controller posts to such addresses only when --%s allows them (e.g. --%s=%s/%d)",
		e.Addr, e.Why, AllowedCIDRsFlag, AllowedCIDRsFlag, e.Addr, bits)
}

// ParseCIDRs reads the values of AllowedCIDRsFlag and ServiceCIDRFlag: CIDRs, or single
// addresses.
func ParseCIDRs(values []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(values))
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !strings.Contains(v, "/") {
			addr, err := netip.ParseAddr(v)
			if err != nil {
				return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", v)
			}
			out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
			continue
		}
		prefix, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", v)
		}
		if prefix.Addr().Is4In6() && prefix.Bits() >= 96 {
			prefix = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96)
		}
		out = append(out, prefix.Masked())
	}
	return out, nil
}
