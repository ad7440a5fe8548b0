package fluxreceiver

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// A body over the limit (1 MiB by default) is refused with 413 before its credentials are looked
// at; a body at the limit is read.
func TestReceiverRefusesOversizedBody(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "size-token"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	path := newReceiver(t, ns, "hmac", "generic-hmac", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)

	big := bytes.Repeat([]byte("x"), DefaultMaxBodySize+1)
	code, msg := post(t, path, big, map[string]string{"X-Signature": "sha256=" + mac(sha256Hash, token, big)})
	g.Expect(code).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(msg).To(Equal("the body is too large"))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).To(BeEmpty())

	atLimit := big[:DefaultMaxBodySize]
	code, msg = post(t, path, atLimit, map[string]string{"X-Signature": "sha256=" + mac(sha256Hash, token, atLimit)})
	g.Expect(code).To(Equal(200), msg)
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(BeEmpty())
}

// Each Receiver takes a burst of requests, then one per interval: the next gets 429 with
// Retry-After, while another Receiver still takes requests. Requests that ask nothing (a ping, an
// event not handled, a replay) do not spend the budget. This receiver takes 2 at once and one a
// minute, so that a slow machine cannot refill the bucket during the test.
func TestReceiverRateLimitsPerReceiver(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "rate-token"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	busy := newReceiver(t, ns, "busy", "github", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")},
		func(r *notificationv1.Receiver) { r.Spec.Events = []string{"push"} })
	quiet := newReceiver(t, ns, "quiet", "generic", "quiet-token", []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)
	url := startServer(t, Limits{Burst: 2, RateInterval: time.Minute})

	sign := func(event string, body []byte) map[string]string {
		return map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, body), "X-GitHub-Event": event}
	}
	for i := range 5 {
		body := []byte(fmt.Sprintf(`{"zen":"%d"}`, i))
		code, msg := postTo(t, url, busy, body, sign("ping", body))
		g.Expect(code).To(Equal(200), msg)
		code, msg = postTo(t, url, busy, body, sign("issues", body))
		g.Expect(code).To(Equal(200), msg)
	}
	for i := range 2 {
		body := githubPush("git.example.com", "team/app", fmt.Sprintf("refs/heads/b%d", i))
		code, msg := postTo(t, url, busy, body, sign("push", body))
		g.Expect(code).To(Equal(200), msg)
	}
	body := githubPush("git.example.com", "team/app", "refs/heads/b3")
	req, err := http.NewRequest(http.MethodPost, url+busy, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	for k, v := range sign("push", body) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(429))
	g.Expect(resp.Header.Get("Retry-After")).To(Equal("60"))

	code, msg := postTo(t, url, quiet, []byte(`{}`), nil)
	g.Expect(code).To(Equal(200), msg)
}

// A suspended Receiver is answered 503 and asks nothing; resumed, it takes requests again.
func TestReceiverSuspended(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	path := newReceiver(t, ns, "generic", "generic", "suspend-token", []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)

	r := getReceiver(g, ns, "generic")
	r.Spec.Suspend = true
	g.Expect(k8s.Update(ctx(), r)).To(Succeed())
	// Until the receiver's cache sees the change, requests are still taken.
	g.Eventually(func() int { code, _ := post(t, path, []byte(`{}`), nil); return code }, 10*time.Second).Should(Equal(503))
	before := requestedAt(gitRepositoryGVK, ns, "app")(g)
	code, msg := post(t, path, []byte(`{}`), nil)
	g.Expect(code).To(Equal(503))
	g.Expect(msg).To(Equal("the receiver is suspended"))
	g.Consistently(requestedAt(gitRepositoryGVK, ns, "app"), time.Second).Should(Equal(before))

	r = getReceiver(g, ns, "generic")
	r.Spec.Suspend = false
	g.Expect(k8s.Update(ctx(), r)).To(Succeed())
	g.Eventually(func() int { code, _ := post(t, path, []byte(`{}`), nil); return code }, 10*time.Second).Should(Equal(200))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(Equal(before))
}
