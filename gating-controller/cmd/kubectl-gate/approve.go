package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/response"
)

// newRespondCmd is `kubectl gate approve` or `kubectl gate reject`: a GateApproval in the
// caller's own name, answering the gate's open request pending approval.
func newRespondCmd(flags *genericclioptions.ConfigFlags, decision gatingv1alpha1.GateDecision) *cobra.Command {
	var revision string
	verb := string(decision)
	cmd := &cobra.Command{
		Use:   verb + " NAME [REASON]",
		Short: fmt.Sprintf("%s the open request pending approval on a gate", strings.ToUpper(verb[:1])+verb[1:]),
		Long: fmt.Sprintf(`%s the open request of a gate with spec.approval, by creating a GateApproval in your own
name: spec.user and spec.groups are who the API server says you are (a SelfSubjectReview), and
its admission policy refuses any other. Whether the response counts is for the gate's approval
rules to say; kubectl gate status shows it.`, strings.ToUpper(verb[:1])+verb[1:]),
		Example: fmt.Sprintf(`  kubectl gate %[1]s release "Tested on staging" -n flux-system
  kubectl gate %[1]s release --revision main@sha1:4f2c9e1 -n flux-system`, verb),
		Args: nameAndOptionalReason,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := newSession(flags)
			if err != nil {
				return err
			}
			name, reason := args[0], ""
			if len(args) == 2 {
				reason = strings.TrimSpace(args[1])
			}
			gate, err := s.getGate(cmd.Context(), name)
			if err != nil {
				return err
			}
			if gate.Spec.Approval == nil {
				return fmt.Errorf("gate %s/%s has no spec.approval: nothing waits for approvals (use kubectl gate open)", gate.Namespace, name)
			}
			if !cmd.Flags().Changed("revision") {
				// The response is for the revision of the pending request, as the gate counts only those.
				if p := response.PendingRevision(gate); p != "" {
					revision = p
					fmt.Fprintf(cmd.ErrOrStderr(), "responding for revision %s, the revision of the pending open request\n", printable(revision))
				}
			}
			ga, err := respond(cmd.Context(), s.client, s.config, gate, decision, reason, revision)
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("gate %s/%s: %s by %s", gate.Namespace, name, pastTense(decision), printable(ga.Spec.User))
			if revision != "" {
				msg += " for revision " + printable(revision)
			}
			msg += fmt.Sprintf(" (GateApproval %s)", ga.Name)
			if reason != "" {
				msg += fmt.Sprintf(": %q", reason)
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&revision, "revision", "", "The revision the response is for. Default: the revision of the pending open request, if it names one (only responses for that revision count).")
	return cmd
}

// respond creates the GateApproval as the user of cfg (and c).
func respond(ctx context.Context, c client.Client, cfg *rest.Config, gate *gatingv1alpha1.Gate, decision gatingv1alpha1.GateDecision, reason, revision string) (*gatingv1alpha1.GateApproval, error) {
	who, err := response.UserInfo(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("asking the API server who you are (a GateApproval carries your identity): %w", err)
	}
	ga := response.New(gate, who, decision, reason, revision)
	if err := c.Create(ctx, ga); err != nil {
		return nil, err
	}
	return ga, nil
}

func pastTense(d gatingv1alpha1.GateDecision) string {
	if d == gatingv1alpha1.DecisionReject {
		return "rejected"
	}
	return "approved"
}

// printApproval is the approval section of `kubectl gate status NAME`.
func printApproval(out io.Writer, gate *gatingv1alpha1.Gate) error {
	spec, st := gate.Spec.Approval, gate.Status.Approval
	if spec == nil {
		return nil
	}
	w := tabwriter.NewWriter(out, labelWidth, 8, 2, ' ', 0)
	if st == nil || st.Pending == nil {
		fmt.Fprintf(w, "Approval:\tno open request yet (%d %s required)\n", spec.RequiredApprovals(), plural(spec.RequiredApprovals()))
		return w.Flush()
	}
	p := st.Pending
	req := "open requested at " + formatTime(p.RequestedAt.Time)
	if p.RequestedBy != "" {
		req += " by " + oneLine(p.RequestedBy)
	}
	if p.Revision != "" {
		req += " for revision " + oneLine(p.Revision)
	}
	if reason := collapse(p.Reason); reason != "" {
		req += fmt.Sprintf(": %q", reason)
	}
	fmt.Fprintf(w, "Approval:\t%s\n", orDash(string(st.State)))
	fmt.Fprintf(w, "Pending request:\t%s\n", req)
	if len(p.Authors) > 0 {
		// Whom preventSelfApproval refuses besides the requester.
		fmt.Fprintf(w, "Revision authors:\t%s\n", oneLine(strings.Join(p.Authors, ", ")))
	}
	for _, c := range gate.Status.Conditions {
		if c.Type == "Approved" {
			fmt.Fprintf(w, "Approval message:\t%s\n", oneLine(c.Message))
		}
	}
	fmt.Fprintf(w, "Approved by:\t%s\n", orDash(oneLine(strings.Join(st.ApprovedBy, ", "))))
	if err := w.Flush(); err != nil {
		return err
	}
	if len(st.Rules) > 0 {
		fmt.Fprintln(out, "Rules:")
		h := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(h, "  RULE\tAPPROVALS\tAPPROVED-BY")
		for _, r := range st.Rules {
			fmt.Fprintf(h, "  %s\t%d/%d\t%s\n", oneLine(r.Name), len(r.ApprovedBy), r.Minimum, orDash(oneLine(strings.Join(r.ApprovedBy, ", "))))
		}
		if err := h.Flush(); err != nil {
			return err
		}
	}
	if len(st.Responses) > 0 {
		fmt.Fprintln(out, "Responses:")
		h := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(h, "  TIME\tUSER\tDECISION\tCOUNTED\tREASON")
		for _, r := range st.Responses {
			counted := "yes"
			if !r.Counted {
				counted = "no: " + oneLine(r.Refused)
			}
			fmt.Fprintf(h, "  %s\t%s\t%s\t%s\t%s\n", formatTime(r.Time.Time), oneLine(r.User), r.Decision, counted, orDash(oneLine(r.Reason)))
		}
		return h.Flush()
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return "approval"
	}
	return "approvals"
}
