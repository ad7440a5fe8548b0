package gatereceiver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// maxReasonLength bounds the reason kept in the annotations, events and history.
const maxReasonLength = 1024

// requestPattern is the receiver's one route (net/http's ServeMux pattern).
const requestPattern = "POST /gates/{namespace}/{name}/{action}"

// body is what a caller sends.
type body struct {
	// Reason of the request, shown in the gate's history and events.
	Reason string `json:"reason,omitempty"`
	// For is how long the request lasts (a Go duration), overriding spec.window.
	For string `json:"for,omitempty"`
	// Timestamp is when the caller made the request (RFC 3339); it must be within the window.
	Timestamp string `json:"timestamp"`
}

// parseBody decodes and checks a request body: one JSON object and nothing after it; unknown
// fields are refused so that a typo such as "duration" is not silently ignored. maxFor is the
// longest `for` accepted.
func parseBody(raw []byte, maxFor time.Duration) (body, error) {
	var b body
	if err := decodeObject(raw, &b, "reason, for and timestamp"); err != nil {
		return b, err
	}
	var err error
	if b.Reason, err = checkReason(b.Reason); err != nil {
		return b, err
	}
	if b.For != "" {
		d, err := time.ParseDuration(b.For)
		if err != nil || d <= 0 {
			return b, fmt.Errorf("for %q is not a positive duration such as 2h", b.For)
		}
		if d > maxFor {
			return b, fmt.Errorf("for %q is longer than %s, the longest request this receiver accepts (--receiver-max-duration)", b.For, maxFor)
		}
	}
	if b.Timestamp == "" {
		return b, errNoTimestamp
	}
	return b, nil
}

var errNoTimestamp = errors.New("timestamp is required: the time of the request, RFC 3339 such as 2026-11-22T10:00:00Z")

// decodeObject decodes raw into v, a struct of the known fields (named in the errors): one JSON
// object, nothing after it, no unknown field.
func decodeObject(raw []byte, v any, fields string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body must be a JSON object with %s: %w", fields, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("the body must be one JSON object with %s, and nothing after it", fields)
	}
	return nil
}

// checkReason trims a reason and refuses one too long for the annotations, events and history,
// or with control characters that would garble a terminal showing it.
func checkReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	if len(reason) > maxReasonLength {
		return reason, fmt.Errorf("reason is longer than %d bytes", maxReasonLength)
	}
	if strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
		return reason, fmt.Errorf("reason must not contain control characters (other than newlines and tabs)")
	}
	return reason, nil
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

// errNoReceiver is what parseRequestPath returns for a namespace or name that no gate can have.
var errNoReceiver = errors.New(notFound)

// parseRequestPath reads the gate and the action of a request routed by requestPattern. Only a
// namespace (a DNS-1123 label) and a name (a DNS-1123 subdomain) that a Gate can have are taken,
// so that nothing else reaches the cache or the logs; both get the one answer of an unknown gate.
func parseRequestPath(r *http.Request) (types.NamespacedName, action, error) {
	act, ok := actions[r.PathValue("action")]
	if !ok {
		return types.NamespacedName{}, action{}, errors.New("the action must be open, close, approve or reject")
	}
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if len(validation.IsDNS1123Label(key.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(key.Name)) > 0 {
		return types.NamespacedName{}, action{}, errNoReceiver
	}
	return key, act, nil
}
