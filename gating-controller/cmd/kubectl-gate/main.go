// Command kubectl-gate is the `kubectl gate` plugin: it asks Sluice Gates to open or close, shows
// their state and waits for them. It only writes request annotations; the gating-controller
// decides and reports the state in the Gate status.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func main() {
	// controller-runtime complains on stderr when its logger is never set; a CLI has no use for it.
	crlog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		// An error may quote what someone wrote on a gate (an admission message does).
		fmt.Fprintln(os.Stderr, "error:", printableLines(err.Error()))
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-gate",
		Short: "Open, close, inspect and wait for Sluice Gates",
		// Shown as `kubectl gate` in help and usage, as kubectl runs the plugin.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl gate"},
		SilenceUsage:  true, // a failed API call is not a usage mistake
		SilenceErrors: true, // main prints the error once, kubectl style
	}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newRequestCmd(flags, openRequest),
		newRequestCmd(flags, closeRequest),
		newRespondCmd(flags, gatingv1alpha1.DecisionApprove),
		newRespondCmd(flags, gatingv1alpha1.DecisionReject),
		newStatusCmd(flags),
		newWaitCmd(flags),
		newUICmd(flags),
	)
	return root
}
