package runner

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// IsInvocation reports whether args (os.Args) ask for the runner: `<binary> runner ...`. The
// controller's main, and the TestMain of packages that start a local runner, call Main then.
func IsInvocation(args []string) bool { return len(args) > 1 && args[1] == "runner" }

// Main runs the runner subcommand with args (after "runner") and returns the exit code:
//
//	runner --socket <path> --workdir <dir>   serve sessions
//	runner job <dir>                         one session (started by the daemon, fd 3)
func Main(args []string) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "runner")
	if len(args) == 2 && args[0] == jobArg {
		conn, err := net.FileConn(os.NewFile(3, "session"))
		if err != nil {
			log.Error("session", "error", err)
			return 1
		}
		if err := runJob(conn, args[1]); err != nil {
			log.Error("session", "error", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	socket := fs.String("socket", "/run/runner/runner.sock", "The Unix socket the controller connects to.")
	workdir := fs.String("workdir", "/work", "The directory of the sessions' trees and HOMEs; emptied at start.")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: manifest-generator runner [flags]\n\nRuns .flux.yaml commands for the controller, without its credentials.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := Serve(ctx, *socket, *workdir, log); err != nil {
		log.Error("runner", "error", err)
		return 1
	}
	return 0
}
