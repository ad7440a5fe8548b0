package egress

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Policy says which addresses may be connected to.
type Policy struct {
	// ServiceCIDRs are the cluster's Service ranges, refused; none when unknown.
	ServiceCIDRs []netip.Prefix
	// Allowed are ranges allowed although refused otherwise; 0.0.0.0/0 and ::/0 allow
	// everything.
	Allowed []netip.Prefix
	// Flag is the controller's flag that sets Allowed, named in refusals so that a user knows
	// what to change.
	Flag string
	// Doing says what the controller does at the address, in refusals: "reaches", "posts to".
	Doing string
}

// thisNetwork is 0.0.0.0/8: Linux connects 0.0.0.0 to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// Check returns a *RefusedAddressError when addr may not be connected to.
func (p *Policy) Check(addr netip.Addr) error {
	addr = addr.Unmap()
	if why := p.refusal(addr); why != "" {
		return &RefusedAddressError{Addr: addr, Why: why, Flag: p.Flag, Doing: p.Doing}
	}
	return nil
}

// refusal says why addr is refused, "" when it is not.
func (p *Policy) refusal(addr netip.Addr) string {
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

// Control is a net.Dialer's Control: it runs before each connection, with the address
// resolved.
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
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

// RefusedAddressError is an address a Policy refuses. Retrying cannot help until the URL or the
// controller's flags change.
type RefusedAddressError struct {
	Addr netip.Addr
	// Why says what kind of address it is: "a loopback address".
	Why string
	// Flag and Doing are the Policy's.
	Flag, Doing string
}

func (e *RefusedAddressError) Error() string {
	bits := 32
	if e.Addr.Is6() {
		bits = 128
	}
	doing := e.Doing
	if doing == "" {
		doing = "reaches"
	}
	if e.Flag == "" {
		return fmt.Sprintf("refusing to connect to %s, %s: the controller %s such addresses only when its flags allow them", e.Addr, e.Why, doing)
	}
	return fmt.Sprintf("refusing to connect to %s, %s: the controller %s such addresses only when --%s allows them (e.g. --%s=%s/%d)",
		e.Addr, e.Why, doing, e.Flag, e.Flag, e.Addr, bits)
}
