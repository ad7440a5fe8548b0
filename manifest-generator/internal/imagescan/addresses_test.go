package imagescan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// refusal is the message of a refused address.
func refusal(addr, why, allow string) string {
	return fmt.Sprintf("refusing to connect to %s, %s: the controller reaches such addresses only when --external-service-allowed-cidrs allows them (e.g. --external-service-allowed-cidrs=%s)",
		addr, why, allow)
}

// startOn starts a server of handler on a loopback address other than 127.0.0.1 (Linux answers
// on all of 127.0.0.0/8).
func startOn(t *testing.T, addr string, handler http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// By default the automation reaches no registry on the controller's host (loopback, unspecified
// addresses), on the link-local addresses of cloud metadata services, or in the cluster's
// Service range when it is given: the address dialed is checked, so a host name resolving to
// such an address is refused too, whatever transport the caller gives. The refusal names the
// flag that allows it, and nothing reaches the registry.
func TestRegistryAddressesRefusedByDefault(t *testing.T) {
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	host, requests := counting(t, reg)
	_, port, _ := net.SplitHostPort(host)
	ctx := context.Background()
	serviceRange := AddressPolicy{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}
	for _, tc := range []struct {
		name, host string
		policy     AddressPolicy
		opts       Options
		want       string
	}{
		{"a loopback registry", host, AddressPolicy{}, Options{}, refusal("127.0.0.1", "a loopback address", "127.0.0.1/32")},
		{"a loopback registry through a transport of the caller's", host, AddressPolicy{}, Options{Transport: reg.Transport()},
			refusal("127.0.0.1", "a loopback address", "127.0.0.1/32")},
		{"a host name resolving to loopback", "localhost:" + port, AddressPolicy{}, Options{}, "a loopback address"},
		{"the unspecified address", "0.0.0.0:" + port, AddressPolicy{}, Options{Insecure: true},
			refusal("0.0.0.0", "an unspecified address", "0.0.0.0/32")},
		{"the cloud metadata service", "169.254.169.254", AddressPolicy{}, Options{},
			refusal("169.254.169.254", "a link-local address (cloud metadata services are there)", "169.254.169.254/32")},
		{"a Service of the cluster", "10.96.0.1:5000", serviceRange, Options{},
			refusal("10.96.0.1", "in the cluster's Service range 10.96.0.0/12", "10.96.0.1/32")},
		{"another loopback address than the one allowed", "127.0.0.2:" + port,
			AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, Options{Insecure: true},
			refusal("127.0.0.2", "a loopback address", "127.0.0.2/32")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := New(Config{Addresses: tc.policy, Clock: newClock()})
			repo := repository(t, tc.host, "app")
			before := requests.Load()

			_, err := s.Tags(ctx, repo, tc.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).To(HavePrefix("listing tags of " + repo.Name() + ": refusing to connect to "))
			var refused *RefusedAddressError
			g.Expect(errors.As(err, &refused)).To(BeTrue())

			_, err = s.Newest(ctx, repo, mustFilter(t, "*"), tc.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			_, _, err = s.Created(ctx, repo.Tag("1.0.0"), tc.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(requests.Load()).To(Equal(before), "no request reached the registry")
		})
	}
}

// --external-service-allowed-cidrs opens ranges up: 127.0.0.0/8 lets the automation read a
// registry on loopback.
func TestRegistryAddressesAllowedByFlag(t *testing.T) {
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	for _, allowed := range [][]string{{"127.0.0.0/8"}, {"127.0.0.1"}, {"0.0.0.0/0", "::/0"}} {
		g := NewWithT(t)
		prefixes, err := ParseCIDRs(allowed)
		g.Expect(err).NotTo(HaveOccurred())
		s := New(Config{Addresses: AddressPolicy{Allowed: prefixes}, Clock: newClock()})
		for _, opts := range []Options{{}, {Transport: reg.Transport()}} {
			tags, err := s.Tags(context.Background(), repository(t, reg.Host(), "app"), opts)
			g.Expect(err).NotTo(HaveOccurred(), "%v", allowed)
			g.Expect(tags).To(ConsistOf("1.0.0"))
		}
	}
}

// A redirect from an allowed registry to a refused address is refused when it is dialed (a host
// name is checked once resolved: go-containerregistry refuses redirects to private IP literals
// by itself); the location it pointed to is not repeated. Allowed, the same redirect is
// followed.
func TestRegistryRedirectToRefusedAddress(t *testing.T) {
	g := NewWithT(t)
	const secret = "private-location-s3cret"
	internal := startOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"app","tags":["9.9.9"]}`)
	}))
	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	target, err := url.Parse("http://" + reg.Host())
	g.Expect(err).NotTo(HaveOccurred())
	registry := httputil.NewSingleHostReverseProxy(target)
	front := startOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isTagList(r) {
			http.Redirect(w, r, "http://localhost:"+internalPort+"/"+secret+"?token="+secret, http.StatusFound)
			return
		}
		registry.ServeHTTP(w, r)
	}))
	repo := repository(t, strings.TrimPrefix(front.URL, "http://"), "app")

	s := New(Config{Addresses: AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}, Clock: newClock()})
	_, err = s.Tags(context.Background(), repo, Options{Insecure: true})
	g.Expect(err).To(MatchError(And(
		HavePrefix("listing tags of "+repo.Name()+": refusing to connect to "),
		ContainSubstring("a loopback address: the controller reaches such addresses only when --external-service-allowed-cidrs allows them"))))
	g.Expect(err.Error()).NotTo(ContainSubstring(secret))

	s = New(Config{Addresses: AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}},
		Clock: newClock()})
	tags, err := s.Tags(context.Background(), repo, Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("9.9.9"))
}

// An Options.Transport whose connections cannot be checked is refused.
func TestRegistryTransportNotChecked(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	_, err := s.Tags(context.Background(), repository(t, reg.Host(), "app"), Options{Transport: roundTripper(reg.Transport().RoundTrip)})
	g.Expect(err).To(MatchError(ContainSubstring("only an *http.Transport is accepted, so that the address policy checks its connections")))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
