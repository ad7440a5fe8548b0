package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func newStatusCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show whether gates are opened, why, and when they change next",
		Example: `  kubectl gate status -n flux-system
  kubectl gate status -A
  kubectl gate status bypass-signoff -n flux-system`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && allNamespaces {
				return fmt.Errorf("a gate NAME cannot be combined with --all-namespaces: use -n")
			}
			s, err := newSession(flags)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				gate, err := s.getGate(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				dyn, err := dynamic.NewForConfig(s.config)
				if err != nil {
					return err
				}
				waiting := listWaiting(cmd.Context(), dyn, "", gate.Namespace)
				return printGate(cmd.OutOrStdout(), gate, waitingFor(gate, waiting))
			}
			list := &gatingv1alpha1.GateList{}
			var opts []client.ListOption
			if !allNamespaces {
				opts = append(opts, client.InNamespace(s.namespace))
			}
			if err := s.client.List(cmd.Context(), list, opts...); err != nil {
				return err
			}
			if len(list.Items) == 0 {
				// Like kubectl: the "nothing" message goes to stderr so scripts read an empty table.
				if allNamespaces {
					fmt.Fprintln(cmd.ErrOrStderr(), "No gates found.")
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "No gates found in namespace %q.\n", s.namespace)
				}
				return nil
			}
			if err := printGateTable(cmd.OutOrStdout(), list.Items, allNamespaces); err != nil {
				return err
			}
			// On stderr, so scripts still read a plain table, and people see a broken schedule.
			for i := range list.Items {
				if failed := keeperFailed(&list.Items[i]); failed != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "Warning: gate %s/%s: %s\n", list.Items[i].Namespace, list.Items[i].Name, failed)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List the gates of all namespaces.")
	return cmd
}

// printGateTable prints one line per gate; the cause, requester and reason come from the newest
// history entry, which explains the state the gate is in.
func printGateTable(out io.Writer, items []gatingv1alpha1.Gate, withNamespace bool) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := []string{"NAME", "OPENED", "NEXT-TRANSITION", "CAUSE", "REQUESTED-BY", "REASON"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for i := range items {
		gate := &items[i]
		var last gatingv1alpha1.GateTransition
		if len(gate.Status.History) > 0 {
			last = gate.Status.History[0]
		}
		row := []string{gate.Name, openedStatus(gate), timeOrDash(gate.Status.NextTransitionAt),
			orDash(oneLine(last.Cause)), orDash(oneLine(last.RequestedBy)), orDash(oneLine(last.Reason))}
		if withNamespace {
			row = append([]string{gate.Namespace}, row...)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// labelWidth is the width of the label column of printGate, its longest label and two spaces,
// kept by each section after a table so that the labels stay aligned.
const labelWidth = len("Reset to default at:") + 2

// printGate is the detailed view of one gate, in the label: value layout of kubectl describe.
func printGate(out io.Writer, gate *gatingv1alpha1.Gate, waiting gateWaiting) error {
	w := tabwriter.NewWriter(out, labelWidth, 8, 2, ' ', 0)
	message := "-"
	if c := apimeta.FindStatusCondition(gate.Status.Conditions, gatesapi.OpenedCondition); c != nil && c.Message != "" {
		message = oneLine(c.Message)
	}
	fmt.Fprintf(w, "Gate:\t%s/%s\n", gate.Namespace, gate.Name)
	fmt.Fprintf(w, "State:\t%s (Opened=%s)\n", stateWord(gate), openedStatus(gate))
	fmt.Fprintf(w, "Message:\t%s\n", message)
	fmt.Fprintf(w, "Cause:\t%s\n", stateCause(gate))
	if failed := keeperFailed(gate); failed != "" {
		fmt.Fprintf(w, "Warning:\t%s\n", failed)
	}
	fmt.Fprintf(w, "Default:\t%s\n", gate.Spec.DefaultState())
	fmt.Fprintf(w, "Requested at:\t%s\n", timeOrDash(gate.Status.RequestedAt))
	fmt.Fprintf(w, "Request:\t%s\n", describeRequest(gate.Status.Request))
	fmt.Fprintf(w, "Reset to default at:\t%s\n", requestEnd(gate))
	fmt.Fprintf(w, "Next transition at:\t%s\n", timeOrDash(gate.Status.NextTransitionAt))
	if err := w.Flush(); err != nil {
		return err
	}
	if err := printPromotion(out, gate); err != nil {
		return err
	}
	if err := printApproval(out, gate); err != nil {
		return err
	}
	if err := printWaiting(out, waiting); err != nil {
		return err
	}
	w = tabwriter.NewWriter(out, labelWidth, 8, 2, ' ', 0)
	if len(gate.Status.History) == 0 {
		fmt.Fprintf(w, "History:\t-\n")
		return w.Flush()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "History:")
	h := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(h, "  TIME\tSTATE\tCAUSE\tREQUESTED-BY\tREASON")
	for _, t := range gate.Status.History {
		state := "closed"
		if t.Opened {
			state = "opened"
		}
		fmt.Fprintf(h, "  %s\t%s\t%s\t%s\t%s\n", formatTime(t.Time.Time), state, orDash(oneLine(t.Cause)),
			orDash(oneLine(t.RequestedBy)), orDash(oneLine(t.Reason)))
	}
	return h.Flush()
}

// describeRequest reads like the message of `kubectl gate open`, so the request in force is
// recognisable.
func describeRequest(r *gatingv1alpha1.GateRequest) string {
	if r == nil {
		return "-"
	}
	verb := "open"
	if r.State == gatingv1alpha1.GateClosed {
		verb = "close"
	}
	msg := verb + " requested"
	if r.RequestedBy != "" {
		msg += " by " + oneLine(r.RequestedBy)
	}
	// %q writes the reason's unprintable runes as escapes.
	if reason := collapse(r.Reason); reason != "" {
		msg += fmt.Sprintf(": %q", reason)
	}
	return msg
}

// openedStatus is the status of the Opened condition; Unknown until the controller has set it.
func openedStatus(gate *gatingv1alpha1.Gate) string {
	if c := apimeta.FindStatusCondition(gate.Status.Conditions, gatesapi.OpenedCondition); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}

func stateWord(gate *gatingv1alpha1.Gate) string {
	switch metav1.ConditionStatus(openedStatus(gate)) {
	case metav1.ConditionTrue:
		return "opened"
	case metav1.ConditionFalse:
		return "closed"
	default:
		return "unknown"
	}
}

// Times are shown in UTC RFC 3339, the format of the request annotations, so they compare by eye.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func timeOrDash(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return formatTime(t.Time)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
