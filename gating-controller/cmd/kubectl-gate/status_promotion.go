package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// printPromotion shows the gate's chain besides requests and approvals: the revision it is
// opened for, where spec.promotion stands (what was promoted, what soaks and until when, what it
// waits for) and whether spec.checks hold the gate.
func printPromotion(out io.Writer, gate *gatingv1alpha1.Gate) error {
	w := tabwriter.NewWriter(out, labelWidth, 8, 2, ' ', 0)
	if r := gate.Status.OpenedForRevision; r != "" {
		fmt.Fprintf(w, "Opened for revision:\t%s\n", oneLine(r))
	}
	if gate.Spec.Promotion != nil {
		st := gate.Status.Promotion
		if st == nil {
			st = &gatingv1alpha1.GatePromotionStatus{}
		}
		promoted := "-"
		if st.Revision != "" {
			promoted = oneLine(st.Revision) + " at " + timeOrDash(st.PromotedAt)
		}
		fmt.Fprintf(w, "Promoted:\t%s\n", promoted)
		candidate := "-"
		if st.Candidate != "" {
			candidate = oneLine(st.Candidate)
			if st.SoakingSince != nil {
				candidate += fmt.Sprintf(", soaking since %s, promoted at %s", timeOrDash(st.SoakingSince), timeOrDash(st.OpensAt))
			}
		}
		fmt.Fprintf(w, "Candidate:\t%s\n", candidate)
		fmt.Fprintf(w, "Promotion:\t%s\n", orDash(oneLine(st.Message)))
	}
	if len(gate.Spec.Checks) > 0 {
		checks := fmt.Sprintf("%d passing", len(gate.Spec.Checks))
		if gate.Status.Checks != "" {
			checks = "failing: " + oneLine(gate.Status.Checks)
		}
		fmt.Fprintf(w, "Checks:\t%s\n", checks)
	}
	return w.Flush()
}
