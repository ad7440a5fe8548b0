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
	o := m.Event.InvolvedObject
	msg := map[string]any{
		"username": username, "icon_url": "", "icon_emoji": "", "channel": "",
		"attachments": []any{map[string]any{
			"color":       color,
			"author_name": fmt.Sprintf("%s/%s.%s", strings.ToLower(o.Kind), o.Name, o.Namespace),
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

// LogValues name the event's object, its reason and the Alert.
func (m Message) LogValues() []any {
	o := m.Event.InvolvedObject
	return []any{"alert", m.Alert, "object", o.Kind + "/" + o.Namespace + "/" + o.Name, "reason", m.Event.Reason}
}
