package fluxreceiver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-gitops/sluice/shared/status"

	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxreceiver/routing"
)

// maxNamed bounds the objects an event names; the others are counted.
const maxNamed = 20

// report logs what an accepted request did and records it on the Receiver: a Normal event naming
// the objects asked to reconcile (or saying why none was), a Warning event for the errors. No
// credentials or bodies: what comes from the payload (references, the repository's URL) is
// cleaned of control characters, shortened, and its URL credentials redacted.
func (h *handler) report(req *request, p *routing.Push, out outcome) {
	var what string
	switch {
	case p != nil:
		refs := p.Refs
		if len(refs) > 3 {
			refs = append(refs[:3:3], fmt.Sprintf("%d more", len(p.Refs)-3))
		}
		what = fmt.Sprintf("push of %s to %s", clean(strings.Join(refs, ", ")), clean(status.Redact(p.URLs[0])))
	case req.event != "":
		what = fmt.Sprintf("%s event %s", req.receiver.Spec.Type, quote(req.event))
	default:
		what = req.receiver.Spec.Type + " request"
	}
	names := make([]string, 0, len(out.requested))
	for _, t := range out.requested {
		names = append(names, t.name(req.key.Namespace))
	}
	var msg string
	if len(names) > 0 {
		shown := names
		if len(shown) > maxNamed {
			shown = append(shown[:maxNamed:maxNamed], fmt.Sprintf("and %d more", len(names)-maxNamed))
		}
		msg = fmt.Sprintf("%s: reconciliation requested for %s", what, strings.Join(shown, ", "))
	} else {
		msg = fmt.Sprintf("%s: no object to ask to reconcile", what)
	}
	if skipped := skippedText(out); skipped != "" {
		msg += " (" + skipped + ")"
	}
	req.log.Info("request accepted", "requested", names, "unrouted", out.unrouted, "filtered", out.filtered)
	if h.s.EventRecorder != nil {
		h.s.EventRecorder.Event(req.receiver, corev1.EventTypeNormal, requestedReason, msg)
	}
	if len(out.errs) > 0 {
		err := errors.Join(out.errs...)
		req.log.Error(err, "asking objects to reconcile")
		if h.s.EventRecorder != nil {
			h.s.EventRecorder.Event(req.receiver, corev1.EventTypeWarning, failedReason, status.Redact(err.Error()))
		}
	}
}

// skippedText says which objects a request left alone, "" when none.
func skippedText(out outcome) string {
	var parts []string
	if out.unrouted > 0 {
		parts = append(parts, plural(out.unrouted, "GitRepository", "GitRepositories")+" not following the pushed repository and reference")
	}
	if out.filtered > 0 {
		parts = append(parts, plural(out.filtered, "object", "objects")+" left out by the filters")
	}
	return strings.Join(parts, ", ")
}

// requestedMessage is the answer of an accepted request: how many objects were asked, not
// which, since the caller needs no names of the cluster.
func requestedMessage(n int) string {
	return "reconciliation requested for " + plural(n, "object", "objects")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// maxShown bounds a string of the request shown in a log, an event or an answer.
const maxShown = 200

// clean makes a string of the request fit for a log or an event: without control characters,
// at most maxShown bytes.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "..."
	}
	return s
}

// quote is a cleaned string of the request, quoted.
func quote(s string) string {
	return strconv.Quote(clean(s))
}
