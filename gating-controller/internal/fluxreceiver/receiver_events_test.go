package fluxreceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// An authenticated event the Receiver does not subscribe to, and a ping, are answered 200 and ask
// nothing; events are compared without regard to case, as Flux compares them.
func TestReceiverIgnoresUnsubscribedEvents(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "events-token"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	path := newReceiver(t, ns, "github", "github", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")},
		func(r *notificationv1.Receiver) { r.Spec.Events = []string{"Push"} })

	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	signed := map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, body), "X-GitHub-Event": "issues"}
	code, msg := post(t, path, body, signed)
	g.Expect(code).To(Equal(200))
	g.Expect(msg).To(Equal(`event "issues" is not handled by this receiver`))

	ping := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	code, msg = post(t, path, ping, map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, ping), "X-GitHub-Event": "ping"})
	g.Expect(code).To(Equal(200))
	g.Expect(msg).To(Equal("pong"))
	g.Consistently(requestedAt(gitRepositoryGVK, ns, "app"), 2*time.Second).Should(BeEmpty())

	// The same push event, subscribed to, is taken.
	push := githubPush("git.example.com", "team/app", "refs/heads/master")
	code, msg = post(t, path, push, map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, push), "X-GitHub-Event": "push"})
	g.Expect(code).To(Equal(200), msg)
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(BeEmpty())
}
