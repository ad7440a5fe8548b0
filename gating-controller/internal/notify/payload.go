package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Endpoint types, as GateNotification's spec.type names them.
const (
	TypeGeneric     = "generic"
	TypeGenericHMAC = "generic-hmac"
	TypeSlack       = "slack"
	TypeMSTeams     = "msteams"
)

// Body is what is posted for the event to an endpoint of the type: the Event itself for generic
// and generic-hmac, a Slack message, or a Teams Adaptive Card message.
func Body(typ string, ev Event) ([]byte, error) {
	switch typ {
	case TypeGeneric, TypeGenericHMAC:
		return json.Marshal(ev)
	case TypeSlack:
		return json.Marshal(slackMessage(ev))
	case TypeMSTeams:
		return json.Marshal(teamsMessage(ev))
	default:
		return nil, fmt.Errorf("unknown notification type %q", typ)
	}
}

// Title is the one-line summary of an event: "Gate flux-system/change-freeze closed".
func Title(ev Event) string {
	gate := ev.Namespace + "/" + ev.Gate
	switch ev.Event {
	case "Opened":
		return "Gate " + gate + " opened"
	case "Closed":
		return "Gate " + gate + " closed"
	case "KeeperFailed":
		return "A GateKeeper of gate " + gate + " cannot be evaluated"
	default:
		return "Gate " + gate + ": " + ev.Event
	}
}

// fact is a labelled detail of an event, shown by Slack and Teams.
type fact struct{ title, value string }

// facts are the details of an event besides its title and message, in the order shown.
func facts(ev Event) []fact {
	out := []fact{{"Cause", ev.Cause}}
	if ev.PreviousState != "" {
		out = append(out, fact{"State", ev.PreviousState + " → " + ev.State})
	} else {
		out = append(out, fact{"State", ev.State})
	}
	if ev.RequestedBy != "" {
		out = append(out, fact{"Requested by", ev.RequestedBy})
	}
	if ev.GateKeeper != "" {
		out = append(out, fact{"GateKeeper", ev.GateKeeper})
	}
	if ev.Reason != "" {
		out = append(out, fact{"Reason", ev.Reason})
	}
	if ev.Until != nil {
		out = append(out, fact{"Until", ev.Until.UTC().Format(time.RFC3339)})
	}
	out = append(out, fact{"Time", ev.Time.UTC().Format(time.RFC3339)})
	return out
}

// slackMessage is an incoming-webhook message of Slack (docs.slack.dev, "Sending messages using
// incoming webhooks"): `text` is the notification's fallback, the blocks (Block Kit: header,
// section with mrkdwn text and fields, context) are what the channel shows.
func slackMessage(ev Event) map[string]any {
	fields := []map[string]any{}
	for _, f := range facts(ev) {
		fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*" + f.title + "*\n" + slackEscape(f.value)})
	}
	blocks := []map[string]any{
		{"type": "header", "text": map[string]any{"type": "plain_text", "text": Title(ev)}},
		{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": slackEscape(ev.Message)}},
		{"type": "section", "fields": fields},
	}
	if ev.URL != "" {
		blocks = append(blocks, map[string]any{"type": "context", "elements": []map[string]any{
			{"type": "mrkdwn", "text": "<" + slackEscape(ev.URL) + "|Open in the dashboard>"},
		}})
	}
	return map[string]any{"text": slackEscape(Title(ev) + ": " + ev.Message), "blocks": blocks}
}

// slackEscape escapes the three characters Slack's mrkdwn reserves (&, <, >), so that a reason
// cannot make a link or a mention.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// teamsMessage is a message of Microsoft Teams' incoming webhooks and Workflows (Microsoft Learn,
// "Create and send messages", Send Adaptive Cards using an Incoming Webhook): one attachment of
// content type application/vnd.microsoft.card.adaptive holding an Adaptive Card (version 1.2):
// the title, the message, a FactSet of the details and an Action.OpenUrl to the dashboard.
func teamsMessage(ev Event) map[string]any {
	factSet := []map[string]any{}
	for _, f := range facts(ev) {
		factSet = append(factSet, map[string]any{"title": f.title, "value": f.value})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.2",
		"body": []map[string]any{
			{"type": "TextBlock", "text": Title(ev), "weight": "Bolder", "size": "Medium", "wrap": true},
			{"type": "TextBlock", "text": ev.Message, "wrap": true},
			{"type": "FactSet", "facts": factSet},
		},
	}
	if ev.URL != "" {
		card["actions"] = []map[string]any{{"type": "Action.OpenUrl", "title": "Open in the dashboard", "url": ev.URL}}
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{
			{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card},
		},
	}
}
