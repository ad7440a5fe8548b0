package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseCIDRs reads the values of the flags of a Policy: CIDRs, or single addresses.
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
