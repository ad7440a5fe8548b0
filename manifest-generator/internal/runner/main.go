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

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctree"
)

// IsInvocation reports whether args (os.Args) ask for the runner: `<binary> runner ...`. The
// controller's main, and the TestMain of packages that start a local runner, call Main then.
func IsInvocation(args []string) bool { return len(args) > 1 && args[1] == "runner" }

// Main runs the runner subcommand with args (after "runner") and returns the exit code:
//
//	runner --socket <path> --workdir <dir> [--job-users FIRST-LAST]   serve sessions
//	runner job <dir>                         one session (started by the daemon, fd 3)
func Main(args []string) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "runner")
	if len(args) == 2 && args[0] == jobArg {
		// FileConn duplicates the descriptor: the original is closed at once, or every command
		// would inherit the session's connection to the controller.
		f := os.NewFile(3, "session")
		conn, err := net.FileConn(f)
		_ = f.Close()
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
	jobUsers := fs.String("job-users", "", "A range of user ids, FIRST-LAST: each session runs as one of them, alone, so that sessions cannot see each other. "+
		"Needs the rights to switch users (root, or CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_FOWNER, CAP_KILL). Empty: sessions run as the runner's own user.")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: manifest-generator runner [flags]\n\nRuns .flux.yaml commands for the controller, without its credentials.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	var users *Users
	if *jobUsers != "" {
		u, err := ParseUsers(*jobUsers)
		if err != nil {
			log.Error("runner", "error", err)
			return 2
		}
		users = &u
	}
	err := Serve(ctx, *socket, *workdir, users, log)
	// Stopped (SIGTERM, or the death of the controller that started a local runner): nothing
	// the sessions started may outlive the runner.
	proctree.KillDescendants(os.Getpid())
	if err != nil {
		log.Error("runner", "error", err)
		return 1
	}
	return 0
}
