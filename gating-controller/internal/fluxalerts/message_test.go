package fluxalerts

import (
	"context"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

var failure = eventv1.Event{
	InvolvedObject: corev1.ObjectReference{Kind: "GitRepository", Namespace: "apps", Name: "app", APIVersion: "source.toolkit.fluxcd.io/v1"},
	Severity:       eventv1.EventSeverityError, Reason: "GitOperationFailed", Message: "failed to checkout",
	Metadata:            map[string]string{"revision": "main@sha1:abc", "cluster": "eu"},
	ReportingController: "source-controller",
}

// Slack and Discord get Flux's Slack message: the object as author, the message, a colour by
// severity and the metadata as fields, in key order; Discord without the channel.
func TestChatBodies(t *testing.T) {
	g := NewWithT(t)
	m := Message{Event: failure, Channel: "#gitops"}
	body, err := m.Body(notificationv1beta3.SlackProvider)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(MatchJSON(`{"channel":"#gitops","username":"source-controller","icon_url":"","icon_emoji":"",
		"attachments":[{"color":"danger","author_name":"gitrepository/app.apps","text":"failed to checkout","mrkdwn_in":["text"],
		"fields":[{"title":"cluster","value":"eu","short":false},{"title":"revision","value":"main@sha1:abc","short":false}]}]}`))

	m = Message{Event: failure, Channel: "#gitops", Username: "flux"}
	m.Event.Severity = eventv1.EventSeverityInfo
	body, err = m.Body(notificationv1beta3.DiscordProvider)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(MatchJSON(`{"channel":"","username":"flux","icon_url":"","icon_emoji":"",
		"attachments":[{"color":"good","author_name":"gitrepository/app.apps","text":"failed to checkout","mrkdwn_in":["text"],
		"fields":[{"title":"cluster","value":"eu","short":false},{"title":"revision","value":"main@sha1:abc","short":false}]}]}`))

	_, err = m.Body("telegram")
	g.Expect(err).To(MatchError(ContainSubstring(`the Provider type "telegram" is not sent`)))
}

// Teams gets Flux's Adaptive Card from a workflow webhook (summary first among the facts), and
// the older MessageCard from a connector of *.webhook.office.com.
func TestTeamsBodies(t *testing.T) {
	g := NewWithT(t)
	ev := failure
	ev.Metadata = map[string]string{"revision": "main@sha1:abc", "summary": "prod", "cluster": "eu"}
	body, err := Message{Event: ev}.Body(notificationv1beta3.MSTeamsProvider)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(MatchJSON(`{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","content":{
		"$schema":"http://adaptivecards.io/schemas/adaptive-card.json","type":"AdaptiveCard","version":"1.4","msteams":{"width":"Full"},
		"body":[{"type":"Container","items":[
			{"type":"TextBlock","text":"gitrepository/app.apps","size":"large","weight":"bolder","wrap":true},
			{"type":"TextBlock","text":"failed to checkout","wrap":true,"color":"attention"},
			{"type":"FactSet","facts":[{"title":"summary","value":"prod"},{"title":"cluster","value":"eu"},{"title":"revision","value":"main@sha1:abc"}]}]}]}}]}`))

	g.Expect(connectorCard("msteams", "https://acme.webhook.office.com/webhookb2/x")).To(BeTrue())
	g.Expect(connectorCard("msteams", "https://prod-1.westeurope.logic.azure.com/workflows/x")).To(BeFalse())
	body, err = Message{Event: ev, ConnectorCard: true}.Body(notificationv1beta3.MSTeamsProvider)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(MatchJSON(`{"@type":"MessageCard","@context":"http://schema.org/extensions","themeColor":"FF0000",
		"summary":"gitrepository/app.apps","sections":[{"activityTitle":"failed to checkout","activitySubtitle":"gitrepository/app.apps",
		"facts":[{"name":"cluster","value":"eu"},{"name":"revision","value":"main@sha1:abc"},{"name":"summary","value":"prod"}]}]}`))
}

// A Discord webhook gets Slack's messages under its /slack path; a type not sent is refused
// with the types that are.
func TestProviderTargets(t *testing.T) {
	g := NewWithT(t)
	r := &Resolver{Sender: &notify.Sender{}}
	provider := func(typ, address string) *notificationv1beta3.Provider {
		return &notificationv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "chat"},
			Spec: notificationv1beta3.ProviderSpec{Type: typ, Address: address}}
	}
	tgt, err := r.target(context.Background(), provider("discord", "https://discord.com/api/webhooks/1/abc"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tgt.URL).To(Equal("https://discord.com/api/webhooks/1/abc/slack"))
	tgt, err = r.target(context.Background(), provider("discord", "https://discord.com/api/webhooks/1/abc/slack"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tgt.URL).To(Equal("https://discord.com/api/webhooks/1/abc/slack"))

	_, err = r.target(context.Background(), provider("telegram", "https://example.com/hook"))
	g.Expect(err).To(MatchError("Provider 'chat': the type telegram is not sent by the gating-controller (generic, generic-hmac, slack, discord, msteams, gitea, github and gitlab are)"))
	_, err = r.target(context.Background(), provider("slack", "http://127.0.0.1:1/hook"))
	g.Expect(err).To(HaveOccurred(), "a loopback address is refused")
}
