// Package update writes the change a ManifestUpdate asks for into its Git repository: it clones
// the branch, makes the change (edits the raw YAML, rewrites the patch file or runs the
// updaters in the runner), verifies that exactly the requested change happened, copies back
// what the updaters changed, commits and pushes. It does not reconcile: the ManifestUpdate
// controller decides when to push and records the outcome.
package update

import (
	"context"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/gitwrite"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Updater holds what every change is made with.
type Updater struct {
	// Secrets reads the credentials of the GitRepository and the signing key (the manager's
	// client, which reads Secrets from the API server: bootstrap.ClientOptions).
	Secrets client.Reader
	// Scheme holds the built-in kinds that patch files merge strategically.
	Scheme *runtime.Scheme
	// Path is the PATH generator and updater commands run with.
	Path string
	// MaxOutput caps a generator's standard output in bytes (--max-output-size).
	MaxOutput int64
	// Runner runs the generators and updaters, on copies of the clone without .git, in a
	// process without the controller's credentials (required).
	Runner *runner.Client
	// Limits bound what the generators of the target path produce together.
	Limits fluxyaml.Limits
	// Dir is the scratch directory of the clones (the system's temp dir when empty).
	Dir string
}

// Target is where a change is written: the repository and branch of the ManifestGeneration's
// GitRepository, and the generation's target path and command settings.
type Target struct {
	// RepoName is the GitRepository's name, in the ManifestUpdate's namespace.
	RepoName string
	URL      string
	Branch   string
	// Base is the source's branch, where a new push branch starts.
	Base string
	// FromBase starts from Base every time and replaces Branch (a pull request's branch).
	FromBase   bool
	SecretName string
	// Path is the generation's spec.path, cleaned and relative to the repository root.
	Path string
	// Namespace is the namespace of objects without one (the generation's).
	Namespace string
	Env       map[string]string
	Timeout   time.Duration
	// Egress lets the commands reach the network (the generation's spec.egress).
	Egress bool
}

// Request is one change to push.
type Request struct {
	// Update asks for the change; its namespace holds the Secrets, its spec.git the author and
	// the signing key.
	Update  *generatorv1.ManifestUpdate
	Target  Target
	Message string
}

// Push clones the target branch, makes and verifies the change, commits and pushes it. It
// returns the new commit, or "" when the branch already has the change. Every error is an
// *Error that says the reason to report.
func (u *Updater) Push(ctx context.Context, req Request) (string, error) {
	opts, cleanup, err := u.pushOptions(ctx, req)
	if err != nil {
		return "", &Error{Reason: generatorv1.ReconciliationFailedReason, Err: err}
	}
	defer cleanup()
	commit, err := gitwrite.Push(ctx, opts, func(dir string) error { return u.change(ctx, req, dir) })
	if err != nil {
		if e, ok := asError(err); ok {
			if error(e) != err { // gitwrite redacted credentials from its message: keep err's
				e = &Error{Reason: e.Reason, Terminal: e.Terminal, Err: err}
			}
			return "", e
		}
		return "", &Error{Reason: generatorv1.PushFailedReason, Err: err}
	}
	return commit, nil
}

// scratchDir is a new temporary directory under u.Dir.
func (u *Updater) scratchDir(pattern string) (string, func(), error) {
	dir, err := os.MkdirTemp(u.Dir, pattern)
	if err != nil {
		return "", func() {}, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
