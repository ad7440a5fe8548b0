package harness

import (
	"testing"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// Servers are the real upstreams the system is tested against, on loopback: a Git server
// (`git http-backend` over HTTP), a Helm HTTP repository and an OCI registry
// (shared/testserver).
type Servers struct {
	Git      *testserver.GitServer
	Helm     *testserver.HelmRepository
	Registry *testserver.Registry
	// GitUsername and GitPassword are the basic-auth credentials of the Git server (also for
	// pushes), empty for an anonymous server.
	GitUsername, GitPassword string
}

// ServerOptions configure StartServers.
type ServerOptions struct {
	Git      testserver.Options
	Helm     testserver.HelmRepoOptions
	Registry testserver.RegistryOptions
}

// StartServers starts the three servers; tb's cleanups stop them (in TestMain, use a MainTB).
func StartServers(tb testing.TB, opts ServerOptions) *Servers {
	tb.Helper()
	return &Servers{
		Git:         testserver.NewGitServer(tb, opts.Git),
		Helm:        testserver.NewHelmRepository(tb, opts.Helm),
		Registry:    testserver.NewRegistry(tb, opts.Registry),
		GitUsername: opts.Git.Username,
		GitPassword: opts.Git.Password,
	}
}
