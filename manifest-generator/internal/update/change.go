package update

import (
	"context"
	"fmt"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// change is one attempt at a change, in one clone: what every step of it reads.
type change struct {
	*Updater
	req Request
	// dir is the clone; ref the workload to change.
	dir string
	ref workload.Ref
	// configPath and cfg are the target path's .flux.yaml; cfg is nil in raw mode.
	configPath string
	cfg        *fluxyaml.Config
	// session runs the commands, in the runner, on a copy of the clone without its .git; nil in
	// raw mode, where no command runs.
	session *runner.Session
}

// change makes the requested change in the clone at dir, then verifies it: the manifests of the
// target path regenerated after the change differ from those before in exactly the requested
// field(s) of the workload. Commands never run in the clone: generators and updaters run in the
// runner on a copy of it without .git, and only the files the change verifiably needs are copied
// back. An error leaves nothing to commit.
func (u *Updater) change(ctx context.Context, req Request, dir string) error {
	c := &change{Updater: u, req: req, dir: dir}
	var err error
	if c.ref, err = workload.ParseRef(req.Update.Spec.Workload); err != nil {
		return changeFailed(fmt.Errorf("spec.workload: %w", err))
	}
	if err := c.open(); err != nil {
		return err
	}
	if c.session != nil {
		defer c.session.Close()
	}
	return c.run(ctx)
}

// open reads the .flux.yaml of the target path, if any, and starts the session of its commands.
func (c *change) open() error {
	t := c.req.Target
	configPath, found, err := fluxyaml.Find(c.dir, t.Path)
	if err != nil {
		return changeFailed(err)
	}
	if !found {
		return nil
	}
	data, err := fluxyaml.ReadFile(c.dir, configPath)
	if err != nil {
		return changeFailed(fmt.Errorf("reading %s: %w", configPath, err))
	}
	if c.cfg, err = fluxyaml.Parse(data, configPath); err != nil {
		return changeFailed(err)
	}
	c.configPath = configPath
	c.session, err = c.Runner.Session(c.dir, runner.Options{Path: c.Path, Env: t.Env, DefaultTimeout: t.Timeout,
		MaxOutput: c.MaxOutput, Track: c.cfg.CommandUpdated != nil, Egress: t.Egress,
		Owner: runner.OwnerOf(generatorv1.GroupVersion.String(), generatorv1.ManifestUpdateKind, c.req.Update)})
	return err
}

// run generates the manifests, edits the files, generates again and verifies.
func (c *change) run(ctx context.Context) error {
	t := c.req.Target
	before, err := c.manifests(ctx)
	if err != nil {
		return changeFailed(err)
	}
	target, err := findWorkload(before.objects, c.ref, t.Namespace)
	if err != nil {
		return changeFailed(fmt.Errorf("%w in the manifests of path '%s' of branch '%s'", err, t.Path, t.Branch))
	}
	// What the workload must look like after the change.
	want := target.DeepCopy()
	if _, err := c.changeObject(want); err != nil {
		return changeFailed(err)
	}

	var copied []copyback.File
	switch {
	case c.cfg == nil:
		err = c.editRaw()
	case c.cfg.PatchUpdated != nil:
		err = c.editPatchFile(ctx, before.generated)
	case c.cfg.CommandUpdated != nil:
		if err = c.runUpdaters(ctx); err == nil {
			copied, err = c.copyBack(ctx)
		}
	default:
		err = fmt.Errorf("%s uses scanForFiles, which has no updaters: the workload cannot be updated", c.configPath)
	}
	if err != nil {
		return changeFailed(err)
	}

	after, err := c.manifests(ctx)
	if err != nil {
		return verificationFailed("the manifests of path '%s' cannot be generated after the change: %s", t.Path, err.Error())
	}
	if err := verify(before.objects, after.objects, c.ref, t.Namespace, want); err != nil {
		return err
	}
	return c.checkEachFileCounts(ctx, copied, after.objects)
}
