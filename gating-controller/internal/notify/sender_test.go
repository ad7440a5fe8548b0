package notify

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loopback allows the test servers of 127.0.0.1, as --notification-allowed-cidrs=127.0.0.1/32.
func testSender() *Sender {
	return &Sender{
		Policy: &AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Retry:  Retry{Attempts: 3, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond},
	}
}

// server answers the statuses given, then 200, counting requests.
func server(t *testing.T, h func(n int32, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	var count atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read, so that the server notices a client that hangs up
		h(count.Add(1), w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &count
}

func TestDeliverRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handler  func(n int32, w http.ResponseWriter, r *http.Request)
		attempts int
		err      string
	}{
		{"a 4xx is not retried", func(_ int32, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(404) }, 1,
			"the endpoint answered 404 Not Found"},
		{"429 with Retry-After, capped, then 200", func(n int32, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(429)
			}
		}, 2, ""},
		{"5xx until the attempts are spent", func(_ int32, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }, 3,
			"the endpoint answered 503 Service Unavailable (after 3 attempts)"},
		{"a hanging endpoint times out", func(_ int32, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, 3,
			"no answer within 100ms (after 3 attempts)"},
		{"a large answer is read only so far", func(_ int32, w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", 4<<20)))
		}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, count := server(t, tc.handler)
			// The large answer's case is about what is read, not about time: on a busy machine
			// its first bytes may take longer than the others' 100ms.
			timeout := 100 * time.Millisecond
			if strings.HasPrefix(tc.name, "a large answer") {
				timeout = 5 * time.Second
			}
			start := time.Now()
			out := testSender().Deliver(context.Background(), Target{Type: TypeGeneric, URL: srv.URL + "/s3cr3t", Timeout: timeout}, goldenEvent())
			if out.Attempts != tc.attempts || int(count.Load()) != tc.attempts {
				t.Errorf("attempts %d, requests %d, want %d", out.Attempts, count.Load(), tc.attempts)
			}
			if got := errString(out.Err); got != tc.err {
				t.Errorf("error %q, want %q", got, tc.err)
			}
			if strings.Contains(errString(out.Err), "s3cr3t") || strings.Contains(errString(out.Err), srv.URL) {
				t.Errorf("the error quotes the URL: %v", out.Err)
			}
			if time.Since(start) > 2*time.Second+timeout {
				t.Errorf("took %s: Retry-After is capped", time.Since(start))
			}
		})
	}
}

// A redirect to another host is not followed: the signature stays with the endpoint it was made
// for. A redirect on the same host is followed, signed.
func TestDeliverRedirects(t *testing.T) {
	other, otherCount := server(t, func(int32, http.ResponseWriter, *http.Request) {})
	var signature atomic.Value
	same, _ := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusPermanentRedirect)
		case "/here":
			signature.Store(r.Header.Get(SignatureHeader))
		}
	})
	s := testSender()
	out := s.Deliver(context.Background(), Target{Type: TypeGenericHMAC, URL: same.URL + "/away", Token: []byte("k")}, goldenEvent())
	if !errors.Is(out.Err, errRedirectOtherHost) || out.Attempts != 1 || otherCount.Load() != 0 {
		t.Errorf("redirect to another host: %v after %d attempts, %d requests there", out.Err, out.Attempts, otherCount.Load())
	}
	out = s.Deliver(context.Background(), Target{Type: TypeGenericHMAC, URL: same.URL + "/moved", Token: []byte("k")}, goldenEvent())
	if out.Err != nil || !strings.HasPrefix(signature.Load().(string), "sha256=") {
		t.Errorf("same-host redirect: %v, signature %q", out.Err, signature.Load())
	}
}

// Refused addresses: checked on the URL when it holds an IP address, and on each address dialed
// (a host name resolving to loopback), never retried.
func TestDeliverRefusesAddresses(t *testing.T) {
	srv, count := server(t, func(int32, http.ResponseWriter, *http.Request) {})
	s := &Sender{Retry: Retry{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, url := range []string{srv.URL, "http://localhost" + port, "http://[::1]" + port, "http://169.254.169.254/latest/meta-data", "http://0.0.0.0" + port} {
		out := s.Deliver(context.Background(), Target{Type: TypeGeneric, URL: url}, goldenEvent())
		var refused *RefusedAddressError
		if !errors.As(out.Err, &refused) || out.Attempts > 1 {
			t.Errorf("%s: %v after %d attempts, want refused at once", url, out.Err, out.Attempts)
		}
	}
	if count.Load() != 0 {
		t.Errorf("%d requests reached the server", count.Load())
	}
	services := &Sender{Policy: &AddressPolicy{ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}}
	if _, err := services.ParseAddress("http://10.96.0.10/hook"); err == nil || !strings.Contains(err.Error(), "in the cluster's Service range 10.96.0.0/12") {
		t.Errorf("Service range: %v", err)
	}
	if _, err := services.ParseAddress("ftp://example.com/x"); !errors.Is(err, errNotHTTP) {
		t.Errorf("ftp: %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2021, 3, 26, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "7": 7 * time.Second, "-1": 0, "soon": 0,
		"Fri, 26 Mar 2021 10:00:30 GMT": 30 * time.Second, "Fri, 26 Mar 2021 09:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
