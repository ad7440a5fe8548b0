package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func newWaitCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		target  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NAME --for opened|closed",
		Short: "Wait until a gate is opened or closed",
		Long: `Wait until the Opened condition of a gate is True (--for opened) or False (--for closed).
Exits 0 as soon as the state is reached (at once if it already is), non-zero on timeout.`,
		Example: `  kubectl gate open bypass-signoff "Patching a CVE" -n flux-system
  kubectl gate wait bypass-signoff --for opened --timeout 1m -n flux-system`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			want, err := wantedStatus(target)
			if err != nil {
				return err
			}
			if timeout < 0 {
				return fmt.Errorf("invalid --timeout %s: must not be negative", timeout)
			}
			s, err := newSession(flags)
			if err != nil {
				return err
			}
			name := args[0]
			// Fail fast on a wrong name or namespace rather than waiting out the timeout.
			if _, err := s.getGate(cmd.Context(), name); err != nil {
				return err
			}
			ctx, cancel := watchtools.ContextWithOptionalTimeout(cmd.Context(), timeout)
			defer cancel()
			// The informer behind UntilWithSync logs through the context logger; a watch ended by our
			// own timeout is not worth a line on stderr.
			ctx = klog.NewContext(ctx, logr.Discard())
			err = s.waitFor(ctx, name, want)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out waiting for gate %s/%s to be %s", s.namespace, name, target)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gate %s/%s is %s\n", s.namespace, name, target)
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "for", "", "The state to wait for: opened or closed.")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "How long to wait; 0 waits forever.")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}

func wantedStatus(target string) (metav1.ConditionStatus, error) {
	switch target {
	case "opened":
		return metav1.ConditionTrue, nil
	case "closed":
		return metav1.ConditionFalse, nil
	default:
		return "", fmt.Errorf("invalid --for %q: must be opened or closed", target)
	}
}

// waitFor watches the one gate rather than polling it: UntilWithSync lists, then watches from
// that list, and re-lists on its own when the watch breaks, so no change is missed.
func (s *session) waitFor(ctx context.Context, name string, want metav1.ConditionStatus) error {
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			list := &gatingv1alpha1.GateList{}
			err := s.client.List(ctx, list, client.InNamespace(s.namespace), &client.ListOptions{Raw: &opts})
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return s.client.Watch(ctx, &gatingv1alpha1.GateList{}, client.InNamespace(s.namespace), &client.ListOptions{Raw: &opts})
		},
	}
	reached := func(gate *gatingv1alpha1.Gate) bool {
		c := apimeta.FindStatusCondition(gate.Status.Conditions, gatesapi.OpenedCondition)
		return c != nil && c.Status == want
	}
	gone := fmt.Errorf("gate %s/%s was deleted while waiting", s.namespace, name)
	// The precondition sees the listed state, so a gate already in the wanted state returns at once.
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(s.namespace + "/" + name)
		if err != nil {
			return false, err
		}
		if !exists {
			return false, gone
		}
		return reached(obj.(*gatingv1alpha1.Gate)), nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &gatingv1alpha1.Gate{}, precondition, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return false, gone
		case watch.Added, watch.Modified:
			gate, ok := ev.Object.(*gatingv1alpha1.Gate)
			return ok && reached(gate), nil
		}
		return false, nil
	})
	return err
}
