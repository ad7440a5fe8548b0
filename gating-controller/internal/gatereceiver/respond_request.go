package gatereceiver

import (
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The routes of a response: more specific than requestPattern, so ServeMux sends them here.
const (
	approvePattern = "POST /gates/{namespace}/{name}/approve"
	rejectPattern  = "POST /gates/{namespace}/{name}/reject"
)

// maxRevisionLength bounds a revision: Flux's longest (a branch and a sha256 digest) are far
// shorter.
const maxRevisionLength = 1024

// respondBody is what an approver sends. It has no identity field on purpose: who responds is
// what the API server says of the caller's token, never what the body claims (an unknown field,
// such as "user", is refused).
type respondBody struct {
	// Reason of the response, recorded in the GateApproval.
	Reason string `json:"reason,omitempty"`
	// Revision the response is for; default the revision of the gate's pending open request.
	Revision string `json:"revision,omitempty"`
	// Timestamp is when the caller made the request (RFC 3339); it must be within the window.
	Timestamp string `json:"timestamp"`
}

// parseRespondBody decodes and checks the body of /approve and /reject, as parseBody does the
// body of /open and /close.
func parseRespondBody(raw []byte) (respondBody, error) {
	var b respondBody
	if err := decodeObject(raw, &b, "reason, revision and timestamp"); err != nil {
		return b, err
	}
	var err error
	if b.Reason, err = checkReason(b.Reason); err != nil {
		return b, err
	}
	b.Revision = strings.TrimSpace(b.Revision)
	if len(b.Revision) > maxRevisionLength {
		return b, fmt.Errorf("revision is longer than %d bytes", maxRevisionLength)
	}
	if strings.ContainsFunc(b.Revision, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return b, fmt.Errorf("revision must not contain spaces or control characters")
	}
	if b.Timestamp == "" {
		return b, errNoTimestamp
	}
	return b, nil
}

// parseRespondPath reads the gate of a request routed by approvePattern or rejectPattern: only a
// namespace and a name that a Gate can have, so that nothing else reaches the API server or the
// logs.
func parseRespondPath(r *http.Request) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	ok := len(validation.IsDNS1123Label(key.Namespace)) == 0 && len(validation.IsDNS1123Subdomain(key.Name)) == 0
	return key, ok
}
