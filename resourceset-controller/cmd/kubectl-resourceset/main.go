// Command kubectl-resourceset is the `kubectl resourceset` plugin. `build` renders ResourceSets
// with the resourceset-controller's own builder and input code, without a cluster; with --diff
// it compares the result with a cluster by a server-side apply dry-run, as the controller's
// field manager.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// controller-runtime complains on stderr when its logger is never set; a CLI has no use for it.
	crlog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

func newRootCmd() *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-resourceset",
		Short: "Render Sluice ResourceSets locally and compare them with a cluster",
		// Shown as `kubectl resourceset` in help and usage, as kubectl runs the plugin.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl resourceset"},
		SilenceUsage:  true, // a failed build is not a usage mistake
		SilenceErrors: true, // main prints the error once, kubectl style
	}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newBuildCmd(flags))
	return root
}

func newBuildCmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &buildOptions{flags: flags}
	cmd := &cobra.Command{
		Use:   "build -f FILE [--inputs-from FILE] [--inputs-from-provider FILE] [--diff]",
		Short: "Print the objects a ResourceSet generates, or their diff with the cluster",
		Long: `Render the ResourceSets of FILE with the resourceset-controller's builder and print the
generated objects as a YAML stream, with the owner labels the controller sets, each step's
objects after a "# step: NAME" line. No cluster is needed: the inputs of spec.inputsFrom come
from the ResourceSetInputProviders of --inputs-from-provider (or --inputs-from, and FILE), from
their status.exportedInputs, or from spec.defaultValues for the Static type, whose id is then
the id of the provider's name (the controller's is that of its UID). --inputs-from also takes
a plain list of inputs, which replaces spec.inputs, as flux-operator's build does.

With --diff, each object is compared with the cluster by a server-side apply dry-run and
reported as created, configured (with a diff), unchanged, skipped or deleted. Exit codes with
--diff are those of kubectl diff: 0 no differences, 1 differences, 2 error.`,
		Example: `  kubectl resourceset build -f podinfo.yaml
  kubectl resourceset build -f apps.yaml --inputs-from-provider providers.yaml
  kubectl resourceset build -f apps.yaml --inputs-from inputs.yaml
  cat podinfo.yaml | kubectl resourceset build -f -
  kubectl resourceset build -f podinfo.yaml --diff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdin, o.stdout, o.stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if o.filename == "" {
				return errors.New("--filename is required: give the file of the ResourceSet with -f FILE, or -f - for stdin")
			}
			if o.diff {
				return o.runDiff(cmd.Context())
			}
			return o.runBuild(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.filename, "filename", "f", "", "File with the ResourceSet(s) to build; - reads stdin.")
	cmd.Flags().StringVarP(&o.inputsFrom, "inputs-from", "i", "", "File with a list of inputs that replaces spec.inputs, or with the ResourceSetInputProviders that spec.inputsFrom selects; - reads stdin.")
	cmd.Flags().StringVar(&o.inputsFromProvider, "inputs-from-provider", "", "File with the ResourceSetInputProviders that spec.inputsFrom selects; - reads stdin.")
	cmd.Flags().BoolVar(&o.diff, "diff", false, "Compare the objects with the cluster (server-side apply dry-run) instead of printing them.")
	return cmd
}
