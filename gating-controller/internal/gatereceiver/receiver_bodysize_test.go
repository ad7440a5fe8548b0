package gatereceiver

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook/bodytest"
)

// defaultMaxBody is the receiver's cap on a body, as Limits.withDefaults sets it.
var defaultMaxBody = Limits{}.withDefaults().MaxBody

// startCountingReceiver serves another receiver, with these limits, on a loopback listener that
// counts what the server reads, until the test ends.
func startCountingReceiver(t *testing.T, limits Limits) *bodytest.CountingListener {
	t.Helper()
	counting := bodytest.Listen(t)
	srv := newServer(limits)
	srv.Listener = counting
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Start(ctx) }()
	return counting
}

// The body is read before it is authenticated, as in Argo Workflows' CVE-2026-42294 (an OOM from
// reading a webhook's body whole before authentication): on /open and /close and on /approve and
// /reject, a body over the cap (16 KiB) is answered 413 once the cap is read, whether it comes
// with the gate's token, a wrong one, none, or a Kubernetes token the API server accepts;
// chunked, or under a Content-Length that the body does not honour. The server reads at most the
// cap and bodytest.ReadMargin of the connection, whatever the client writes, and nothing is written on
// the gate.
//
// This test found that net/http, after the 413, still read up to 256 KiB more of a chunked body
// (to discard it, before closing the connection): 282,892 bytes read of the connection for a cap
// of 16 KiB, where the receiver now ends the reading at the cap (at most 21,363 bytes read).
// Checked against a reintroduced bug (then restored): webhook.ReadBody reading the body whole
// with io.ReadAll(r.Body) and checking its size after (400 after the server read the whole
// 64 MiB stream, where 413 after at most cap+bodytest.ReadMargin is expected).
func TestReceiverReadsNoMoreThanTheCap(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "cap-token-5e2d"
	newReceiverGate(t, ns, "release", token)
	ana := serviceAccountToken(t, ns, "ana")
	ln := startCountingReceiver(t, Limits{})
	open, approve := "/gates/"+ns+"/release/open", "/gates/"+ns+"/release/approve"

	for _, tc := range []struct {
		name    string
		path    string
		headers map[string]string
	}{
		{"open, the token", open, withToken(token)},
		{"open, a wrong token", open, withToken("guess")},
		{"open, no token", open, nil},
		{"open, a signature", open, withSignature(token, []byte("x"))},
		{"approve, an approver's token", approve, withToken(ana)},
		{"approve, a wrong token", approve, withToken("guess")},
	} {
		for _, length := range []int64{-1, 1 << 40, defaultMaxBody + 1, 2 * bodytest.MaxStream} {
			got := bodytest.Send(t, ln, tc.path, tc.headers, length)
			what := fmt.Sprintf("%s, Content-Length %d: read %d bytes of %d sent", tc.name, length, got.Read, got.Sent)
			t.Log(what)
			g.Expect(got.Code).To(Equal(http.StatusRequestEntityTooLarge), "%s: %s", what, got.Msg)
			g.Expect(got.Msg).To(Equal("the body is too large"), what)
			g.Expect(got.Read).To(BeNumerically(">", defaultMaxBody), what)
			g.Expect(got.Read).To(BeNumerically("<=", defaultMaxBody+bodytest.ReadMargin), what)
		}
	}
	g.Expect(requestAnnotations(g, ns, "release")).To(BeEmpty())
	g.Expect(gateApprovals(g, ns)).To(BeEmpty())
}

// Oversized bodies spend nothing: neither the failed attempts of their address (so that a caller
// without the token cannot make an address look like a guesser's) nor the gate's rate (so that
// nobody can keep the gate's callers out with bodies it never reads whole), with the token or
// without; and once unauthenticated requests from the caller's own address (an Ingress
// controller, a NAT) have spent its failed attempts, the caller with the token is still taken at
// once, while an oversized body is still refused for its size, unread. The same holds for
// approvers: oversized responses, with an approver's token or a guessed one, leave the address's
// failed attempts whole, so that an approver the receiver has not seen yet gets through. These
// receivers take 3 (2) failed attempts per address and 3 requests per gate, refilled one a
// minute, so that a slow machine cannot refill a bucket during the test.
//
// Checked against reintroduced bugs (then restored): in serveRequest, h.checks.AllowRate spent
// before ReadBody (the fourth oversized body: 429 where 413 is expected); h.checks.Fail(r, now)
// for a body over the cap, in serveRequest (the guess after the oversized bodies: 429 where 401
// is expected) and in serveRespond (the third oversized response: 429 where 413 is expected).
func TestReceiverOversizedBodiesLockOutNobody(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "lockout-token-77b1"
	newReceiverGate(t, ns, "release", token)
	ln := startCountingReceiver(t, Limits{Burst: 3, RateInterval: time.Minute, FailureBurst: 3, FailureInterval: time.Minute})
	url := "http://" + ln.Addr().String()
	path := "/gates/" + ns + "/release/open"
	n := 0
	body := func() []byte { n++; return requestBody(fmt.Sprintf("request %d", n), time.Now()) }
	caller, guesser := withToken(token), withToken("guess")

	// A guess: the Secret is read, one failed attempt of three spent.
	code, msg := postTo(t, url, path, body(), guesser)
	g.Expect(code).To(Equal(401), msg)
	for i := range 20 {
		headers := []map[string]string{caller, guesser}[i%2]
		length := []int64{-1, 1 << 40}[i/2%2]
		got := bodytest.Send(t, ln, path, headers, length)
		g.Expect(got.Code).To(Equal(413), got.Msg)
	}
	// The oversized bodies spent no failed attempt: this guess is checked (401), not refused (429).
	code, msg = postTo(t, url, path, body(), guesser)
	g.Expect(code).To(Equal(401), msg)
	// Nor the gate's rate: the caller's requests are taken.
	for range 2 {
		code, msg = postTo(t, url, path, body(), caller)
		g.Expect(code).To(Equal(202), msg)
	}

	// A flood of guesses spends the address's failed attempts...
	codes := map[int]int{}
	for range 10 {
		code, _ := postTo(t, url, path, body(), guesser)
		codes[code]++
	}
	g.Expect(codes).To(Equal(map[int]int{401: 1, 429: 9}))
	// ...after which a body over the cap is still refused for its size, unread...
	for _, headers := range []map[string]string{guesser, caller} {
		got := bodytest.Send(t, ln, path, headers, -1)
		g.Expect(got.Code).To(Equal(413), got.Msg)
		g.Expect(got.Read).To(BeNumerically("<=", defaultMaxBody+bodytest.ReadMargin))
	}
	// ...and the caller, from the same address, is taken at once.
	code, msg = postTo(t, url, path, body(), caller)
	g.Expect(code).To(Equal(202), msg)
	g.Eventually(func(g Gomega) string {
		req := getGate(g, ns, "release").Status.Request
		g.Expect(req).NotTo(BeNil())
		return req.Reason
	}, 10*time.Second).Should(Equal(fmt.Sprintf("receiver/release-token: request %d", n)))
	code, msg = postTo(t, url, path, body(), caller)
	g.Expect(code).To(Equal(429), "the third request was the last of the gate's budget: %s", msg)

	// Approvers: oversized responses leave the address's two failed attempts whole.
	approvalPolicy(t)
	ana, bo := serviceAccountToken(t, ns, "ana"), serviceAccountToken(t, ns, "bo")
	grantRespond(t, ns, map[string]string{"ana": ana, "bo": bo})
	approvalGate(t, ns, "hotfix", "", serviceAccountUser(ns, "ana"), serviceAccountUser(ns, "bo"))
	responses := startCountingReceiver(t, Limits{FailureBurst: 2, FailureInterval: time.Minute})
	approve := "/gates/" + ns + "/hotfix/approve"
	for i := range 20 {
		headers := []map[string]string{withToken(ana), guesser}[i%2]
		length := []int64{-1, 1 << 40}[i/2%2]
		got := bodytest.Send(t, responses, approve, headers, length)
		g.Expect(got.Code).To(Equal(413), got.Msg)
	}
	code, msg = postTo(t, "http://"+responses.Addr().String(), approve, respondBodyOf("new here"), withToken(bo))
	g.Expect(code).To(Equal(201), msg)
	code, msg = postTo(t, "http://"+responses.Addr().String(), approve, respondBodyOf("me too"), withToken(ana))
	g.Expect(code).To(Equal(201), msg)
	g.Expect(gateApprovals(g, ns)).To(HaveLen(2))
}

// An answer given before the body is read (a path no gate has: 404; /approve without a bearer
// token: 401) reads none of it: the server reads the request's headers and what its
// bufio.Reader reads ahead, at most bodytest.ReadMargin.
//
// This test found that net/http, after such an answer, went on reading up to 256 KiB of the body
// to discard it, twice (528,671 bytes read for a 404); webhook.Serve now ends the reading of a
// body its handler left unread (webhook.EndUnreadBodies). Checked against the bug put back (Serve
// without EndUnreadBodies): the chunked requests read more than the margin.
func TestReceiverEarlyAnswersReadNoBody(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	newReceiverGate(t, ns, "release", "early-token-3f9b")
	ln := startCountingReceiver(t, Limits{})
	for _, tc := range []struct {
		name, path string
		headers    map[string]string
		code       int
	}{
		{"not a gate's path", "/gates/" + ns + "/Release/open", nil, http.StatusNotFound},
		{"approve without a token", "/gates/" + ns + "/release/approve", nil, http.StatusUnauthorized},
		{"approve with basic auth", "/gates/" + ns + "/release/approve", map[string]string{"Authorization": "Basic YW5hOmFuYQ=="}, http.StatusUnauthorized},
	} {
		for _, length := range []int64{-1, 1 << 40, 2 * bodytest.MaxStream} {
			got := bodytest.Send(t, ln, tc.path, tc.headers, length)
			what := fmt.Sprintf("%s, Content-Length %d: read %d bytes of %d sent", tc.name, length, got.Read, got.Sent)
			t.Log(what)
			g.Expect(got.Code).To(Equal(tc.code), "%s: %s", what, got.Msg)
			g.Expect(got.Read).To(BeNumerically("<=", bodytest.ReadMargin), what)
		}
	}
}
