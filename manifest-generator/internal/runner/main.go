package runner

import (
	"context"
	"encoding/json"
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
//	runner --socket <path> --workdir <dir> --job-users FIRST-LAST [--client-uid UID] [limits]   serve sessions
//	runner job <dir> <config>                one session (started by the daemon, fd 3)
//	runner session --workdir <dir> [limits]  one session on standard input and output (a pod's)
//	runner pause                             a session pod's own process, until it is deleted
func Main(args []string) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "runner")
	if len(args) > 0 && args[0] == sessionArg {
		return sessionMain(args[1:], log)
	}
	if len(args) == 1 && args[0] == pauseArg {
		return pause()
	}
	if len(args) == 3 && args[0] == jobArg {
		var cfg jobConfig
		if err := json.Unmarshal([]byte(args[2]), &cfg); err != nil {
			log.Error("session", "error", err)
			return 1
		}
		// FileConn duplicates the descriptor: the original is closed at once, or every command
		// would inherit the session's connection to the controller.
		f := os.NewFile(3, "session")
		conn, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			log.Error("session", "error", err)
			return 1
		}
		if err := runJob(conn, args[1], cfg); err != nil {
			log.Error("session", "error", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	socket := fs.String("socket", "/run/runner/runner.sock", "The Unix socket the controller connects to.")
	workdir := fs.String("workdir", "/work", "The directory of the sessions' trees and HOMEs; emptied at start.")
	jobUsers := fs.String("job-users", "", "A range of user ids, FIRST-LAST: each session runs as one of them, alone, so that sessions cannot see each other. "+
		"Needs the rights to switch users (root, or CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_FOWNER, CAP_KILL).")
	shared := fs.Bool("insecure-shared-user", false, "Without --job-users, run every session as the runner's own user: sessions can read and change each other's files "+
		"and replace the runner's socket. For development as a non-root user only.")
	clientUID := fs.Int("client-uid", os.Geteuid(), "The user id of the controller: connections of any other user are refused.")
	limits := DefaultLimits
	limits.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: manifest-generator runner [flags]\n\nRuns .flux.yaml commands for the controller, without its credentials.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	cfg := Config{Socket: *socket, Workdir: *workdir, SharedUser: *shared, ClientUID: *clientUID, Limits: limits}
	if *jobUsers != "" {
		u, err := ParseUsers(*jobUsers)
		if err != nil {
			log.Error("runner", "error", err)
			return 2
		}
		cfg.Users = &u
	}
	err := Serve(ctx, cfg, log)
	// Stopped (SIGTERM, or the death of the controller that started a local runner): nothing
	// the sessions started may outlive the runner.
	proctree.KillDescendants(os.Getpid())
	if err != nil {
		log.Error("runner", "error", err)
		return 1
	}
	return 0
}
