package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// gateWaiting is what `kubectl gate status NAME` shows of the objects waiting on the gate.
type gateWaiting struct {
	objects []waitingObject
	// namespace is the gate's; narrowed are the kinds listed in it only.
	namespace string
	narrowed  []string
	// skipped are the kinds that could not be listed, but for those not installed.
	skipped []skippedKind
}

// waitingFor picks the objects waiting on gate out of what listWaiting found.
func waitingFor(gate *gatingv1alpha1.Gate, found waitingList) gateWaiting {
	w := gateWaiting{
		objects:   found.byGate[types.NamespacedName{Namespace: gate.Namespace, Name: gate.Name}],
		namespace: gate.Namespace,
		narrowed:  found.narrowed,
	}
	for _, s := range found.skipped {
		if !s.notInstalled {
			w.skipped = append(w.skipped, s)
		}
	}
	return w
}

// printWaiting prints the Waiting section of printGate: a table like the History's, then what
// the table may be missing.
func printWaiting(out io.Writer, waiting gateWaiting) error {
	if len(waiting.objects) == 0 {
		w := tabwriter.NewWriter(out, labelWidth, 8, 2, ' ', 0)
		fmt.Fprintf(w, "Waiting:\t-\n")
		if err := w.Flush(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "Waiting:")
		w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(w, "  KIND\tNAMESPACE/NAME\tSTATE\tHELD-SINCE\tWAITING-REVISION")
		// Whoever may edit an object may write the annotations its state is read from.
		for _, o := range waiting.objects {
			fmt.Fprintf(w, "  %s\t%s/%s\t%s\t%s\t%s\n", o.Kind, o.Namespace, o.Name, oneLine(o.State),
				oneLine(o.HeldSince), oneLine(o.WaitingRevision))
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(waiting.narrowed) > 0 {
		fmt.Fprintf(out, "  %s: listed in namespace %s only, as you may not list them in all namespaces\n",
			strings.Join(waiting.narrowed, ", "), waiting.namespace)
	}
	// One line per reason: a user of one namespace is usually forbidden most kinds alike.
	var reasons []string
	kinds := map[string][]string{}
	for _, s := range waiting.skipped {
		if _, seen := kinds[s.Reason]; !seen {
			reasons = append(reasons, s.Reason)
		}
		kinds[s.Reason] = append(kinds[s.Reason], s.Kind)
	}
	for _, r := range reasons {
		fmt.Fprintf(out, "  %s: not listed: %s\n", strings.Join(kinds[r], ", "), oneLine(r))
	}
	return nil
}
