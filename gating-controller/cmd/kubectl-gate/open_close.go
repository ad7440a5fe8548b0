package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// requestKind is one of the two requests a user can make; they differ only in their verb and
// annotation keys, so open and close share one command implementation.
type requestKind struct {
	verb        string
	requestedAt string
	reason      string
	requestedBy string
	duration    string
	// revision is the annotation of --revision ("" when the request takes none).
	revision string
	example  string
}

var (
	openRequest = requestKind{
		verb:        "open",
		requestedAt: gatesapi.OpenRequestAnnotation,
		reason:      gatingv1alpha1.OpenReasonAnnotation,
		requestedBy: gatingv1alpha1.OpenRequestedByAnnotation,
		duration:    gatingv1alpha1.OpenDurationAnnotation,
		revision:    gatingv1alpha1.OpenRevisionAnnotation,
		example: `  kubectl gate open bypass-signoff "Patching a CVE" --for 2h -n flux-system
  kubectl gate open sre-approval -n flux-system
  kubectl gate open release "Ship 1.2" --revision main@sha1:4f2c9e1 -n flux-system`,
	}
	closeRequest = requestKind{
		verb:        "close",
		requestedAt: gatesapi.CloseRequestAnnotation,
		reason:      gatingv1alpha1.CloseReasonAnnotation,
		requestedBy: gatingv1alpha1.CloseRequestedByAnnotation,
		duration:    gatingv1alpha1.CloseDurationAnnotation,
		example: `  kubectl gate close change-freeze "Black Friday" --for 72h -n flux-system
  kubectl gate close bypass-signoff -n flux-system`,
	}
)

func newRequestCmd(flags *genericclioptions.ConfigFlags, kind requestKind) *cobra.Command {
	var forDuration, revision string
	cmd := &cobra.Command{
		Use:   kind.verb + " NAME [REASON]",
		Short: fmt.Sprintf("Ask the gating-controller to %s a gate", kind.verb),
		Long: fmt.Sprintf(`Ask the gating-controller to %[1]s a gate, by annotating it with the time of the
request, the optional REASON, who asks and, with --for, how long the request lasts
(overriding spec.window). The controller %[1]ss the gate and records it in the status.

Without --for the request lasts for the gate's spec.window; on a gate without spec.window it
does not end by itself: it lasts until the next open or close request.`, kind.verb),
		Example: kind.example,
		Args:    nameAndOptionalReason,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Validated before any API call so that a typo changes nothing.
			if err := validateRequestDuration(forDuration); err != nil {
				return err
			}
			s, err := newSession(flags)
			if err != nil {
				return err
			}
			name, reason := args[0], ""
			if len(args) == 2 {
				reason = strings.TrimSpace(args[1])
			}
			by := whoAmI(cmd.Context(), s.config, flags, cmd.ErrOrStderr())
			patch, err := requestPatch(kind, time.Now(), reason, by, forDuration)
			if err != nil {
				return err
			}
			if kind.revision != "" {
				if patch, err = withRevision(patch, kind.revision, revision); err != nil {
					return err
				}
			}
			gate := &gatingv1alpha1.Gate{}
			gate.Namespace, gate.Name = s.namespace, name
			if err := s.client.Patch(cmd.Context(), gate, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return s.explain(err, name)
			}
			msg := requestSummary(kind, s.namespace, name, by, reason, forDuration)
			if revision != "" {
				msg += fmt.Sprintf(" (for revision %s)", printable(revision))
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	if kind.revision != "" {
		cmd.Flags().StringVar(&revision, "revision", "",
			fmt.Sprintf("The revision the request is for. On a gate with spec.approval only approvals of that revision count, and the approved gate is opened for that revision only. Written to %s.", kind.revision))
	}
	cmd.Flags().StringVar(&forDuration, "for", "",
		fmt.Sprintf("How long the request lasts before the gate returns to its schedule or default (a Go duration such as 30m or 2h; overrides spec.window). Default: the gate's spec.window, or no end (until the next request) without one. Written to %s.", kind.duration))
	return cmd
}

// nameAndOptionalReason replaces cobra's "accepts between 1 and 2 arg(s)" with a hint, as an
// unquoted reason is the usual cause of extra arguments.
func nameAndOptionalReason(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return fmt.Errorf("a gate NAME is required")
	case len(args) > 2:
		return fmt.Errorf("expected NAME and an optional REASON, got %d arguments: quote a reason that has spaces", len(args))
	}
	return nil
}

func validateRequestDuration(value string) error {
	if value == "" {
		return nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return fmt.Errorf("invalid --for %q: %w", value, err)
	}
	if d <= 0 {
		return fmt.Errorf("invalid --for %q: must be longer than 0s", value)
	}
	return nil
}

// requestPatch is a JSON merge patch of the request annotations only: spec and the other
// annotations are left alone, and a null removes a reason or duration left over from an earlier
// request so it cannot be mistaken for part of this one. All annotations of a request are written
// in one patch, so the controller never sees a new requestedAt with the previous reason.
func requestPatch(kind requestKind, now time.Time, reason, by, duration string) ([]byte, error) {
	annotations := map[string]*string{
		kind.requestedAt: ptr(now.UTC().Format(time.RFC3339)),
		kind.requestedBy: ptr(by),
		kind.reason:      nil,
		kind.duration:    nil,
	}
	if reason != "" {
		annotations[kind.reason] = ptr(reason)
	}
	if duration != "" {
		annotations[kind.duration] = ptr(duration)
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
}

// withRevision adds the revision annotation to a request patch; an empty revision removes the
// one of an earlier request.
func withRevision(patch []byte, key, revision string) ([]byte, error) {
	var p map[string]map[string]map[string]*string
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	p["metadata"]["annotations"][key] = nil
	if revision != "" {
		p["metadata"]["annotations"][key] = ptr(revision)
	}
	return json.Marshal(p)
}

func requestSummary(kind requestKind, namespace, name, by, reason, duration string) string {
	msg := fmt.Sprintf("gate %s/%s: %s requested by %s", namespace, name, kind.verb, printable(by))
	if duration != "" {
		msg += " for " + duration
	}
	if reason != "" {
		msg += fmt.Sprintf(": %q", reason)
	}
	return msg
}

func ptr(s string) *string { return &s }
