package egress

import (
	"errors"
	"net/netip"
	"testing"
)

func TestPolicyRefusesInternalAddressesUnlessAllowed(t *testing.T) {
	p := &Policy{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}, Flag: "allowed-cidrs"}
	for addr, why := range map[string]string{
		"127.0.0.1":        "a loopback address",
		"::1":              "a loopback address",
		"::ffff:127.0.0.1": "a loopback address",
		"169.254.169.254":  "a link-local address (cloud metadata services are there)",
		"fe80::1":          "a link-local address (cloud metadata services are there)",
		"0.0.0.0":          "an unspecified address",
		"0.1.2.3":          "an unspecified address",
		"10.96.0.10":       "in the cluster's Service range 10.96.0.0/12",
	} {
		err := p.Check(netip.MustParseAddr(addr))
		var refused *RefusedAddressError
		if !errors.As(err, &refused) || refused.Why != why {
			t.Errorf("%s: got %v, want %q", addr, err, why)
		}
	}
	if err := p.Check(netip.MustParseAddr("203.0.113.7")); err != nil {
		t.Errorf("a public address is refused: %v", err)
	}
	want := "refusing to connect to 127.0.0.1, a loopback address: the controller reaches such addresses only when --allowed-cidrs allows them (e.g. --allowed-cidrs=127.0.0.1/32)"
	if err := p.Check(netip.MustParseAddr("127.0.0.1")); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	p.Allowed, _ = ParseCIDRs([]string{"127.0.0.1", " 10.96.0.0/16 "})
	for _, addr := range []string{"127.0.0.1", "10.96.1.1"} {
		if err := p.Check(netip.MustParseAddr(addr)); err != nil {
			t.Errorf("%s is allowed: %v", addr, err)
		}
	}
	if err := p.Check(netip.MustParseAddr("127.0.0.2")); err == nil {
		t.Error("127.0.0.2 is not allowed")
	}
}

func TestParseCIDRsRefusesWhatIsNeither(t *testing.T) {
	if _, err := ParseCIDRs([]string{"10.0.0.0/33"}); err == nil {
		t.Error("10.0.0.0/33 accepted")
	}
	if _, err := ParseCIDRs([]string{"example.com"}); err == nil {
		t.Error("a host name accepted")
	}
	got, err := ParseCIDRs([]string{"::ffff:10.0.0.0/104", "", "192.0.2.1"})
	if err != nil || len(got) != 2 || got[0].String() != "10.0.0.0/8" || got[1].String() != "192.0.2.1/32" {
		t.Errorf("got %v %v", got, err)
	}
}
