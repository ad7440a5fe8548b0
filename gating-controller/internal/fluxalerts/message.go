package fluxalerts

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
)

// Message is an event on its way to one Provider: Flux's event, with the metadata its Alert adds.
type Message struct {
	Event eventv1.Event
	// Alert names the Alert that sends it: namespace/name.
	Alert string
	// Channel and Username are the Provider's, for the chat types.
	Channel, Username string
	// ConnectorCard says that an msteams Provider is a Teams connector of *.webhook.office.com,
	// which takes the older MessageCard rather than an Adaptive Card.
	ConnectorCard bool
	// Status is what a gitea, github or gitlab Provider sets on the event's commit.
	Status *CommitStatus
}

// Body is what a Provider of the type receives, as Flux's notification-controller posts it:
// generic and generic-hmac get Flux's event itself (generic-hmac signed by the sender); slack and
// discord (through Discord's Slack-compatible webhook) a Slack message with one attachment.
func (m Message) Body(typ string) ([]byte, error) {
	switch typ {
	case notificationv1beta3.GenericProvider, notificationv1beta3.GenericHMACProvider:
		return json.Marshal(m.Event)
	case notificationv1beta3.SlackProvider, notificationv1beta3.DiscordProvider:
		return json.Marshal(m.slackMessage(typ == notificationv1beta3.SlackProvider))
	case notificationv1beta3.MSTeamsProvider:
		if m.ConnectorCard {
			return json.Marshal(m.messageCard())
		}
		return json.Marshal(m.adaptiveCard())
	case notificationv1beta3.GiteaProvider, notificationv1beta3.GitHubProvider, notificationv1beta3.GitLabProvider:
		if m.Status == nil {
			return nil, fmt.Errorf("the event has no commit status for the Provider type %q", typ)
		}
		return m.Status.body(typ)
	default:
		return nil, fmt.Errorf("the Provider type %q is not sent by the gating-controller", typ)
	}
}

// slackMessage is the message of the slack and discord types: the object as author
// ("gitrepository/app.apps"), the event's message, a colour by severity, and a field per
// metadata key (in key order, so that equal events give equal bodies). The channel is sent to
// Slack only; the username is the Provider's, else the reporting controller.
func (m Message) slackMessage(withChannel bool) map[string]any {
	color := "good"
	if m.Event.Severity == eventv1.EventSeverityError {
		color = "danger"
	}
	keys := slices.Sorted(maps.Keys(m.Event.Metadata))
	fields := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		fields = append(fields, map[string]any{"title": k, "value": m.Event.Metadata[k], "short": false})
	}
	username := m.Username
	if username == "" {
		username = m.Event.ReportingController
	}
	msg := map[string]any{
		"username": username, "icon_url": "", "icon_emoji": "", "channel": "",
		"attachments": []any{map[string]any{
			"color":       color,
			"author_name": m.object(),
			"text":        m.Event.Message,
			"mrkdwn_in":   []string{"text"},
			"fields":      fields,
		}},
	}
	if withChannel {
		msg["channel"] = m.Channel
	}
	return msg
}

// object names the event's object as Flux's chat messages do: "gitrepository/app.apps".
func (m Message) object() string {
	o := m.Event.InvolvedObject
	return fmt.Sprintf("%s/%s.%s", strings.ToLower(o.Kind), o.Name, o.Namespace)
}

// adaptiveCard is the msteams message of a Teams workflow webhook, as Flux's: the object, the
// message (in the attention colour for an error) and the metadata as facts, summary first, then
// in key order.
func (m Message) adaptiveCard() map[string]any {
	text := map[string]any{"type": "TextBlock", "text": m.Event.Message, "wrap": true}
	if m.Event.Severity == eventv1.EventSeverityError {
		text["color"] = "attention"
	}
	facts := []map[string]any{}
	if summary, ok := m.Event.Metadata["summary"]; ok {
		facts = append(facts, map[string]any{"title": "summary", "value": summary})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Event.Metadata)) {
		if k != "summary" {
			facts = append(facts, map[string]any{"title": k, "value": m.Event.Metadata[k]})
		}
	}
	return map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"msteams": map[string]any{"width": "Full"},
				"body": []any{map[string]any{
					"type": "Container",
					"items": []any{
						map[string]any{"type": "TextBlock", "text": m.object(), "size": "large", "weight": "bolder", "wrap": true},
						text,
						map[string]any{"type": "FactSet", "facts": facts},
					},
				}},
			},
		}},
	}
}

// messageCard is the msteams message of a Teams connector: the MessageCard, red for an error.
func (m Message) messageCard() map[string]any {
	facts := []map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m.Event.Metadata)) {
		facts = append(facts, map[string]any{"name": k, "value": m.Event.Metadata[k]})
	}
	color := "0076D7"
	if m.Event.Severity == eventv1.EventSeverityError {
		color = "FF0000"
	}
	return map[string]any{
		"@type": "MessageCard", "@context": "http://schema.org/extensions", "themeColor": color, "summary": m.object(),
		"sections": []any{map[string]any{"activityTitle": m.Event.Message, "activitySubtitle": m.object(), "facts": facts}},
	}
}

// Delivered tells whether the forge has the commit status already (the answer to the Target's
// Existing URL); a message without a commit status never is.
func (m Message) Delivered(answer []byte) bool {
	return m.Status != nil && m.Status.delivered(answer)
}

// LogValues name the event's object, its reason and the Alert.
func (m Message) LogValues() []any {
	o := m.Event.InvolvedObject
	return []any{"alert", m.Alert, "object", o.Kind + "/" + o.Namespace + "/" + o.Name, "reason", m.Event.Reason}
}
