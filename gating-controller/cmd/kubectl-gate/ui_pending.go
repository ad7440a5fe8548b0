package main

import (
	"fmt"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// pendingRequests are the requests in the gate's annotations that the gating-controller has not
// handled yet, so that the page shows a `kubectl gate open` at once, and a controller that is not
// running shows as a request that stays pending.
func pendingRequests(gate *gatingv1alpha1.Gate) []string {
	out := []string{}
	ann := gate.GetAnnotations()
	for _, r := range []struct {
		kind    requestKind
		handled string
	}{
		{openRequest, gate.Status.LastHandledOpenAt},
		{closeRequest, gate.Status.LastHandledCloseAt},
	} {
		at := ann[r.kind.requestedAt]
		if at == "" || at == r.handled {
			continue
		}
		msg := fmt.Sprintf("%s requested at %s", r.kind.verb, at)
		if by := ann[r.kind.requestedBy]; by != "" {
			msg += " by " + by
		}
		if d := ann[r.kind.duration]; d != "" {
			msg += " for " + d
		}
		if reason := collapse(ann[r.kind.reason]); reason != "" {
			msg += fmt.Sprintf(": %q", reason)
		}
		out = append(out, msg+", not handled by the gating-controller yet")
	}
	return out
}
