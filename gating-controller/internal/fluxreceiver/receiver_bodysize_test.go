package fluxreceiver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook/bodytest"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// startCountingServer serves another receiver, with these limits, on a loopback listener that
// counts what the server reads, until the test ends.
func startCountingServer(t *testing.T, limits Limits) *bodytest.CountingListener {
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
// reading a webhook's body whole before authentication): a body over the cap (1 MiB) is answered
// 413 once the cap is read, whether it comes with the token, a wrong one, or on a type whose path
// is its only credential; chunked, or under a Content-Length that the body does not honour. The
// server reads at most the cap and bodytest.ReadMargin of the connection, whatever the client writes, and
// asks nothing.
//
// This test found that net/http, after the 413, still read up to 256 KiB more of a chunked body
// (to discard it, before closing the connection): 1,315,364 bytes read of the connection, where
// the receiver now ends the reading at the cap (1,053,156 bytes read, the cap and 4.5 KiB).
// Checked against a reintroduced bug (then restored): webhook.ReadBody reading the body whole
// with io.ReadAll(r.Body) and checking its size after (400 after the server read the whole
// 64 MiB stream, 67,125,478 bytes, where 413 after at most cap+bodytest.ReadMargin is expected).
func TestReceiverReadsNoMoreThanTheCap(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "cap-token-91ce"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	resources := []notificationv1.ReceiverResource{resource("GitRepository", "app")}
	gitlab := newReceiver(t, ns, "gitlab", "gitlab", token, resources, nil)
	generic := newReceiver(t, ns, "generic", "generic", token, resources, nil)
	hmac := newReceiver(t, ns, "hmac", "generic-hmac", token, resources, nil)
	ln := startCountingServer(t, Limits{})

	for _, tc := range []struct {
		name    string
		path    string
		headers map[string]string
	}{
		{"gitlab, the token", gitlab, map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"}},
		{"gitlab, a wrong token", gitlab, map[string]string{"X-Gitlab-Token": "guess"}},
		{"gitlab, no token", gitlab, nil},
		{"generic, the path", generic, nil},
		{"generic-hmac, a signature", hmac, map[string]string{"X-Signature": "sha256=" + mac(sha256Hash, token, []byte("x"))}},
	} {
		for _, length := range []int64{-1, 1 << 40, DefaultMaxBodySize + 1, 2 * bodytest.MaxStream} {
			got := bodytest.Send(t, ln, tc.path, tc.headers, length)
			what := fmt.Sprintf("%s, Content-Length %d: read %d bytes of %d sent", tc.name, length, got.Read, got.Sent)
			t.Log(what)
			g.Expect(got.Code).To(Equal(http.StatusRequestEntityTooLarge), "%s: %s", what, got.Msg)
			g.Expect(got.Msg).To(Equal("the body is too large"), what)
			g.Expect(got.Read).To(BeNumerically(">", DefaultMaxBodySize), what)
			g.Expect(got.Read).To(BeNumerically("<=", DefaultMaxBodySize+bodytest.ReadMargin), what)
		}
	}
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).To(BeEmpty())
}

// Oversized bodies spend nothing: neither the failed attempts of their address (so that a caller
// without the token cannot make an address look like a guesser's) nor the Receiver's rate (so
// that nobody can keep the Receiver's callers out with bodies it never reads whole), with the
// token or without; and once unauthenticated requests from the caller's own address (an Ingress
// controller, a NAT) have spent its failed attempts, the caller with the token is still taken at
// once, while an oversized body is still refused for its size, unread. This receiver takes 3
// failed attempts per address and 3 requests per Receiver, refilled one a minute, so that a slow
// machine cannot refill a bucket during the test.
//
// Checked against reintroduced bugs (then restored): in serveHook, h.checks.AllowRate spent before
// ReadBody (the fourth oversized body: 429 where 413 is expected); h.checks.Fail(r, req.now) for
// a body over the cap (the guess after them: 429 where 401 is expected).
func TestReceiverOversizedBodiesLockOutNobody(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "lockout-token-4a0f"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", map[string]any{"branch": "main"})
	path := newReceiver(t, ns, "hook", "gitlab", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)
	ln := startCountingServer(t, Limits{Burst: 3, RateInterval: time.Minute, FailureBurst: 3, FailureInterval: time.Minute})
	url := "http://" + ln.Addr().String()
	// Each push is another delivery (a push sent again is a replay, which spends nothing).
	n := 0
	push := func() []byte {
		n++
		return mustJSON(map[string]any{"object_kind": "push", "ref": "refs/heads/main", "checkout_sha": fmt.Sprintf("%040x", n),
			"project": map[string]any{"git_http_url": "https://git.example.com/team/app.git"}})
	}
	caller := map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"}
	guesser := map[string]string{"X-Gitlab-Token": "guess", "X-Gitlab-Event": "Push Hook"}

	// A guess: the Secret is read, one failed attempt of three spent.
	code, msg := postTo(t, url, path, push(), guesser)
	g.Expect(code).To(Equal(401), msg)
	for i := range 20 {
		headers := []map[string]string{caller, guesser}[i%2]
		length := []int64{-1, 1 << 40}[i/2%2]
		got := bodytest.Send(t, ln, path, headers, length)
		g.Expect(got.Code).To(Equal(413), got.Msg)
	}
	// The oversized bodies spent no failed attempt: this guess is checked (401), not refused (429).
	code, msg = postTo(t, url, path, push(), guesser)
	g.Expect(code).To(Equal(401), msg)
	// Nor the Receiver's rate: the caller's deliveries are taken.
	for range 2 {
		code, msg = postTo(t, url, path, push(), caller)
		g.Expect(code).To(Equal(200), msg)
		g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
	}

	// A flood of guesses spends the address's failed attempts...
	codes := map[int]int{}
	for range 10 {
		code, _ := postTo(t, url, path, push(), guesser)
		codes[code]++
	}
	g.Expect(codes).To(Equal(map[int]int{401: 1, 429: 9}))
	// ...after which a body over the cap is still refused for its size, unread...
	for _, headers := range []map[string]string{guesser, caller} {
		got := bodytest.Send(t, ln, path, headers, -1)
		g.Expect(got.Code).To(Equal(413), got.Msg)
		g.Expect(got.Read).To(BeNumerically("<=", DefaultMaxBodySize+bodytest.ReadMargin))
	}
	// ...and the caller, from the same address, is taken at once.
	before := requestedAt(gitRepositoryGVK, ns, "app")(g)
	code, msg = postTo(t, url, path, push(), caller)
	g.Expect(code).To(Equal(200), msg)
	g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(Equal(before))
	code, msg = postTo(t, url, path, push(), caller)
	g.Expect(code).To(Equal(429), "the third request was the last of the Receiver's budget: %s", msg)
}

// An answer given before the body is read (an unknown path: 404; a suspended Receiver: 503)
// reads none of it: the server reads the request's headers and what its bufio.Reader reads
// ahead, at most bodytest.ReadMargin, whoever sends a body to whatever path.
//
// This test found that net/http, after such an answer, went on reading up to 256 KiB of the body
// to discard it, twice (528,681 bytes read for a 404); webhook.Serve now ends the reading of a
// body its handler left unread (webhook.EndUnreadBodies). Checked against the bug put back
// (Serve without EndUnreadBodies): the chunked requests read more than the margin.
func TestReceiverEarlyAnswersReadNoBody(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	suspended := newReceiver(t, ns, "paused", "generic", "early-token-77a1", []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)
	r := getReceiver(g, ns, "paused")
	r.Spec.Suspend = true
	g.Expect(k8s.Update(context.Background(), r)).To(Succeed())
	// The receiver reads Receivers from the manager's cache: wait until it sees the suspension.
	g.Eventually(func(g Gomega) bool {
		list := &notificationv1.ReceiverList{}
		g.Expect(served.List(context.Background(), list, client.MatchingFields{WebhookPathIndex: suspended})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		return list.Items[0].Spec.Suspend
	}, 10*time.Second).Should(BeTrue())
	ln := startCountingServer(t, Limits{})

	for _, tc := range []struct {
		name, path string
		code       int
	}{
		{"unknown path", "/hook/" + strings.Repeat("0", 64), http.StatusNotFound},
		{"not a path", "/hook/x", http.StatusNotFound},
		{"suspended", suspended, http.StatusServiceUnavailable},
	} {
		for _, length := range []int64{-1, 1 << 40, 2 * bodytest.MaxStream} {
			got := bodytest.Send(t, ln, tc.path, nil, length)
			what := fmt.Sprintf("%s, Content-Length %d: read %d bytes of %d sent", tc.name, length, got.Read, got.Sent)
			t.Log(what)
			g.Expect(got.Code).To(Equal(tc.code), "%s: %s", what, got.Msg)
			g.Expect(got.Read).To(BeNumerically("<=", bodytest.ReadMargin), what)
		}
	}
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).To(BeEmpty())
}
