package receiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// maxReasonLength bounds the reason kept in the annotations, events and history.
const maxReasonLength = 1024

// body is what a caller sends.
type body struct {
	// Reason of the request, shown in the gate's history and events.
	Reason string `json:"reason,omitempty"`
	// For is how long the request lasts (a Go duration), overriding spec.window.
	For string `json:"for,omitempty"`
	// Timestamp is when the caller made the request (RFC 3339); it must be within the window.
	Timestamp string `json:"timestamp"`
}

// parseBody decodes and checks a request body; unknown fields are refused so that a typo such
// as "duration" is not silently ignored.
func parseBody(raw []byte) (body, error) {
	var b body
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("the body must be a JSON object with reason, for and timestamp: %w", err)
	}
	b.Reason = strings.TrimSpace(b.Reason)
	if len(b.Reason) > maxReasonLength {
		return b, fmt.Errorf("reason is longer than %d bytes", maxReasonLength)
	}
	if b.For != "" {
		if d, err := time.ParseDuration(b.For); err != nil || d <= 0 {
			return b, fmt.Errorf("for %q is not a positive duration such as 2h", b.For)
		}
	}
	if b.Timestamp == "" {
		return b, fmt.Errorf("timestamp is required: the time of the request, RFC 3339 such as 2026-11-22T10:00:00Z")
	}
	return b, nil
}

// checkTimestamp refuses a request made longer ago, or further ahead, than the window: a
// captured request cannot be sent again later, when the replay set has forgotten it.
func checkTimestamp(raw string, now time.Time, window time.Duration) error {
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return fmt.Errorf("timestamp %q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", raw)
	}
	if d := now.Sub(at); d > window || d < -window {
		return fmt.Errorf("timestamp %s is more than %s away from the receiver's clock (%s)",
			raw, window, now.UTC().Format(time.RFC3339))
	}
	return nil
}

// action is the request a path asks for.
type action struct {
	verb  string
	state gatingv1.GateState
}

var actions = map[string]action{
	"open":  {verb: "open", state: gatingv1.GateOpened},
	"close": {verb: "close", state: gatingv1.GateClosed},
}
