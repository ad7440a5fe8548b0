package fluxalerts

import (
	"context"
	"net/netip"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// A gitea Provider sets Flux's commit status on a real Gitea: once per state (the same status
// again is found in Gitea's list and not posted), again when the state changes, and a wrong
// token is an error that does not quote it.
func TestGiteaCommitStatus(t *testing.T) {
	g := NewWithT(t)
	gitea := testserver.NewGitea(t)
	repo := gitea.CreateRepo(t, testserver.GiteaAdmin, "app")
	sha := repo.Commit(t, "main", "v1", map[string]string{"app.yaml": "v1"})
	sender := &notify.Sender{Policy: &notify.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Retry: notify.Retry{Attempts: 1}}
	r := &Resolver{Sender: sender}
	provider := statusProvider(notificationv1beta3.GiteaProvider, "")
	deliver := func(ev eventv1.Event, token string) notify.Outcome {
		t.Helper()
		ev.Metadata = map[string]string{"revision": "main@sha1:" + sha}
		st, err := commitStatus(context.Background(), provider, &notificationv1beta3.Alert{}, ev)
		g.Expect(err).NotTo(HaveOccurred())
		target := notify.Target{Key: "apps/forge", Type: provider.Spec.Type, URL: gitea.URL() + "/" + repo.Owner + "/" + repo.Name + ".git", Token: []byte(token)}
		g.Expect(r.statusTarget(provider, &target, st.SHA)).To(Succeed())
		return sender.Deliver(context.Background(), target, Message{Event: ev, Status: st})
	}
	token := gitea.AdminToken()

	out := deliver(applied, token)
	g.Expect(out.Err).NotTo(HaveOccurred())
	g.Expect(out.Status).To(Equal(201))
	want := testserver.GiteaStatus{Context: "kustomization/podinfo/0c9c2e41", State: "success", Description: "reconciliation succeeded"}
	want.Creator.Login = testserver.GiteaAdmin
	g.Expect(repo.Statuses(t, sha)).To(Equal([]testserver.GiteaStatus{want}))

	out = deliver(applied, token)
	g.Expect(out.Err).NotTo(HaveOccurred())
	g.Expect(out.Duplicate).To(BeTrue(), "the same status is not posted twice")
	g.Expect(repo.Statuses(t, sha)).To(HaveLen(1))

	failed := applied
	failed.Severity, failed.Reason = eventv1.EventSeverityError, "HealthCheckFailed"
	g.Expect(deliver(failed, token).Err).NotTo(HaveOccurred())
	g.Expect(deliver(applied, token).Duplicate).To(BeFalse(), "the newest status of the context is the failure")
	statuses := repo.Statuses(t, sha)
	g.Expect(statuses).To(HaveLen(3))
	g.Expect(statuses[0].State).To(Equal("success"))
	g.Expect(statuses[1]).To(HaveField("Description", "health check failed"))

	out = deliver(failed, "0123456789abcdef-wrong-token")
	g.Expect(out.Err).To(MatchError(ContainSubstring("the endpoint answered 401")))
	g.Expect(out.Err.Error()).NotTo(ContainSubstring("wrong-token"))
	g.Expect(repo.Statuses(t, sha)).To(HaveLen(3))
}
