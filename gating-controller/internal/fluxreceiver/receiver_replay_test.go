package fluxreceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// A delivery sent again (the same X-GitHub-Delivery, or the same push under another id) is
// answered 200 and asks nothing the second time; a new push is taken.
func TestReceiverReplayDoesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "replay-token"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", map[string]any{"branch": "main"})
	path := newReceiver(t, ns, "github", "github", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)

	push := githubPush("git.example.com", "team/app", "refs/heads/main")
	headers := func(body []byte, delivery string) map[string]string {
		return map[string]string{"X-Hub-Signature-256": "sha256=" + mac(sha256Hash, token, body),
			"X-GitHub-Event": "push", "X-GitHub-Delivery": delivery}
	}
	code, msg := post(t, path, push, headers(push, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	g.Expect(code).To(Equal(200), msg)
	first := requestedAt(gitRepositoryGVK, ns, "app")(g)
	g.Expect(first).NotTo(BeEmpty())

	code, msg = post(t, path, push, headers(push, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	g.Expect(code).To(Equal(200))
	g.Expect(msg).To(Equal("this delivery was already received"))
	code, msg = post(t, path, push, headers(push, "another-id"))
	g.Expect(code).To(Equal(200))
	g.Expect(msg).To(Equal("this delivery was already received"))
	// Another body under the first id: the id was seen.
	other := githubPush("git.example.com", "team/app", "refs/heads/main")
	code, msg = post(t, path, other, headers(other, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))
	g.Expect(code).To(Equal(200))
	g.Expect(msg).To(Equal("this delivery was already received"))
	g.Consistently(requestedAt(gitRepositoryGVK, ns, "app"), time.Second).Should(Equal(first))

	code, msg = post(t, path, other, headers(other, "a-new-delivery"))
	g.Expect(code).To(Equal(200), msg)
	g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(Equal(first))
}
