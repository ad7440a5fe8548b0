package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func newUICmd(flags *genericclioptions.ConfigFlags) *cobra.Command {
	var (
		address       string
		allNamespaces bool
		fixedNow      string
		callersMode   bool
		maxCallers    int
		callerIdle    time.Duration
		callerRecheck time.Duration
	)
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve web pages of the gates and of the whole flow, from commit to cluster",
		Long: `Serve two local web pages, with your kubeconfig:

Gates (/) shows the gates of the namespace (-A for all namespaces): their state and its cause,
when a request ends, the openings and closings of the next 14 days, their history, the objects
waiting behind them and their approvals. It refreshes itself every 2 seconds.

Flow (/flow.html) shows the sources with their artifacts, what consumes each one, the gates on
each edge with their state, what every consumer applied, what waits and why, as a graph or a
table. It is redrawn within a second of each change in the cluster (the plugin watches it).

The pages read with your credentials: what your RBAC does not let you list is left out, and the
pages say which kinds. Their buttons (reconcile, suspend and resume, open and close a gate,
approve and reject) act in your own name, and are shown only when your RBAC allows them.

With --authenticate-callers the pages are served to many people, each with their own
Kubernetes token, as deploy/components/dashboard runs them in a cluster.`,
		Example: `  kubectl gate ui -n flux-system
  kubectl gate ui -A --address 127.0.0.1:0
  kubectl gate ui -A --authenticate-callers --address :8090 --certificate-authority /etc/kubernetes-ca/ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now, err := uiClock(fixedNow)
			if err != nil {
				return err
			}
			if callersMode {
				return serveCallers(cmd, flags, address, allNamespaces, now, maxCallers, callerIdle, callerRecheck)
			}
			s, err := newSession(flags)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(s.config)
			if err != nil {
				return err
			}
			d := &dashboard{client: s.client, config: s.config, dynamic: dyn, namespace: s.namespace, now: now,
				serveCtx: cmd.Context()}
			if allNamespaces {
				d.namespace = ""
			}
			d.flowCache = newFlowCache(dyn, d.namespace)
			d.access = newAccessCache(d.accessReview)
			return serveUI(cmd.Context(), cmd, address, d)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:8090", "Address to serve the page on; port 0 picks a free port.")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Show the gates of all namespaces.")
	cmd.Flags().BoolVar(&callersMode, "authenticate-callers", false,
		"Serve many people, each with their own Kubernetes token (an Authorization header, or the page's sign-in), as in a cluster: the page acts with the caller's token, and the plugin uses no credentials of its own. Needs --server and --certificate-authority.")
	cmd.Flags().IntVar(&maxCallers, "max-callers", 64, "With --authenticate-callers: the callers served at once, each with their own watches; past it, the least recently active is dropped.")
	cmd.Flags().DurationVar(&callerIdle, "caller-idle", 15*time.Minute, "With --authenticate-callers: a caller's watches stop after this long without a request.")
	// Tests need a revoked token to be noticed sooner than a minute.
	cmd.Flags().DurationVar(&callerRecheck, "caller-recheck", time.Minute, "With --authenticate-callers: how often a caller's token is reviewed again.")
	_ = cmd.Flags().MarkHidden("caller-recheck")
	// Tests need a fixed "now" to show a timeline that does not move with the calendar.
	cmd.Flags().StringVar(&fixedNow, "now", "", "The instant the page takes as now, RFC 3339 (for tests).")
	_ = cmd.Flags().MarkHidden("now")
	return cmd
}

// uiClock is the clock of the page: the real one, or the fixed instant of --now.
func uiClock(fixed string) (func() time.Time, error) {
	if fixed == "" {
		return time.Now, nil
	}
	t, err := time.Parse(time.RFC3339, fixed)
	if err != nil {
		return nil, fmt.Errorf("invalid --now %q: %w", fixed, err)
	}
	return func() time.Time { return t }, nil
}

// serveUI serves the page until ctx ends (Ctrl-C).
func serveUI(ctx context.Context, cmd *cobra.Command, address string, d *dashboard) error {
	return serve(ctx, cmd, address, newUIHandler(d), d.namespace, "")
}

// serve serves handler until ctx ends.
func serve(ctx context.Context, cmd *cobra.Command, address string, handler http.Handler, namespace, to string) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	// Requests end with ctx, so that Ctrl-C also ends the pages' event streams.
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	scope := fmt.Sprintf("namespace %q", namespace)
	if namespace == "" {
		scope = "all namespaces"
	}
	if to != "" {
		scope += " " + to
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Serving the gates of %s at http://%s/ (Ctrl-C to stop)\n", scope, ln.Addr())

	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	err = srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

// serveCallers serves the pages to callers who each bring their own token (--authenticate-callers).
// Only the API server's address and CA come from the flags; a kubeconfig's credentials, if any,
// are never used.
func serveCallers(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, address string, allNamespaces bool,
	now func() time.Time, maxCallers int, idle, recheck time.Duration) error {
	server, ca := *flags.APIServer, *flags.CAFile
	if host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"); server == "" && host != "" && port != "" {
		// In a pod, as client-go's in-cluster configuration finds the API server.
		server = "https://" + net.JoinHostPort(host, port)
	}
	if server == "" || ca == "" {
		return fmt.Errorf("--authenticate-callers needs the API server's address and CA: --server (in a pod, the kubernetes Service by default) and --certificate-authority")
	}
	if maxCallers < 1 {
		return fmt.Errorf("invalid --max-callers %d: at least 1", maxCallers)
	}
	namespace := *flags.Namespace
	if allNamespaces {
		namespace = ""
	}
	base := &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAFile: ca}}
	c := newCallers(cmd.Context(), base, namespace, now, maxCallers, idle)
	c.recheck = recheck
	return serve(cmd.Context(), cmd, address, c.handler(), namespace, "to callers with their own tokens")
}
