package update

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// The change, top down: Updater.change opens the target path's .flux.yaml and its session,
// run generates the manifests, edits the files (the raw file, the patch file, or the updaters'
// output copied back), generates again and verifies; Updater.Push (updater.go) commits and
// pushes what it leaves. Its helpers are in files of their own: verify.go, objects.go.

// change is one attempt at a change, in one clone: what every step of it reads.
type change struct {
	*Updater
	req Request
	// dir is the clone; edits the workloads to change.
	dir   string
	edits []*edit
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
	if c.edits, err = editsOf(req.Update.Spec); err != nil {
		return changeFailed(err)
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
	// What each workload must look like after the change.
	wants := make([]wanted, len(c.edits))
	for i, e := range c.edits {
		target, err := findWorkload(before.objects, e.ref, t.Namespace)
		if err != nil {
			return changeFailed(fmt.Errorf("%w in the manifests of path '%s' of branch '%s'", err, t.Path, t.Branch))
		}
		want := target.DeepCopy()
		if _, err := e.apply(want); err != nil {
			return changeFailed(fmt.Errorf("%s: %w", e.ref, err))
		}
		wants[i] = wanted{ref: e.ref, object: want}
	}

	var copied []copyback.File
	switch {
	case c.cfg == nil:
		err = c.eachEdit(c.editRaw)
	case c.cfg.PatchUpdated != nil:
		err = c.eachEdit(func(e *edit) error { return c.editPatchFile(ctx, before.generated, e) })
	case c.cfg.CommandUpdated != nil:
		if err = c.eachEdit(func(e *edit) error { return c.runUpdaters(ctx, e) }); err == nil {
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
	if err := verify(before.objects, after.objects, wants, t.Namespace); err != nil {
		return err
	}
	return c.checkEachFileCounts(ctx, copied, after.objects)
}

// generated are the manifests of the target path: the objects to apply and, with a
// patchUpdated config, the generators' output before the patch file.
type generated struct {
	objects   []*unstructured.Unstructured
	generated []*unstructured.Unstructured
}

// manifests are the objects of the target path: raw YAML, or the generators' output with the
// patch file applied.
func (c *change) manifests(ctx context.Context) (generated, error) {
	t := c.req.Target
	if c.cfg == nil {
		objs, err := fluxyaml.ReadRawObjects(c.dir, t.Path, c.Limits)
		if err != nil {
			return generated{}, err
		}
		out := make([]*unstructured.Unstructured, len(objs))
		for i, o := range objs {
			out[i] = o.Object
		}
		return generated{objects: out}, nil
	}
	gen, err := fluxyaml.GenerateObjects(ctx, c.session, c.dir, t.Path, c.configPath, c.cfg, c.Limits)
	if err != nil {
		return generated{}, err
	}
	out := make([]*unstructured.Unstructured, len(gen))
	for i, g := range gen {
		out[i] = g.Object
	}
	res := generated{objects: out, generated: out}
	if c.cfg.PatchUpdated != nil {
		name := filepath.Join(t.Path, c.cfg.PatchUpdated.PatchFile)
		data, err := fluxyaml.ReadFile(c.dir, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return res, nil
		case err != nil:
			return generated{}, fmt.Errorf("reading the patch file %s: %w", name, err)
		}
		// patch.Apply works on copies: res.generated stays the generators' output.
		if res.objects, _, err = patch.Apply(out, data, c.Scheme); err != nil {
			return generated{}, fmt.Errorf("%s (the patch file of %s): %w", name, c.configPath, err)
		}
	}
	return res, nil
}

// eachEdit makes each edit in turn; a failing one is named when there are several.
func (c *change) eachEdit(fn func(*edit) error) error {
	for _, e := range c.edits {
		if err := fn(e); err != nil {
			if len(c.edits) > 1 {
				return fmt.Errorf("%s: %w", e.ref, err)
			}
			return err
		}
	}
	return nil
}

// editRaw edits the file that holds the workload in place, keeping comments and layout.
func (c *change) editRaw(e *edit) error {
	t := c.req.Target
	objs, err := fluxyaml.ReadRawObjects(c.dir, t.Path, c.Limits)
	if err != nil {
		return err
	}
	file := ""
	for _, o := range objs {
		if e.ref.Matches(o.Object, t.Namespace) {
			file = o.File
			break
		}
	}
	if file == "" {
		return fmt.Errorf("workload %s does not exist in the files of path '%s'", e.ref, t.Path)
	}
	path := filepath.Join(c.dir, filepath.FromSlash(file))
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	data, err := fluxyaml.ReadFile(c.dir, filepath.FromSlash(file))
	if err != nil {
		return err
	}
	updated, changed, err := workload.InFile(data, e.ref, t.Namespace, e.applyNode)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !changed {
		return nil
	}
	return patch.WriteFileAtomic(path, updated, info.Mode().Perm())
}

// editPatchFile records the change in the patch file of a patchUpdated config, creating it
// when missing, from the generators' output gen: in the clone, and in the session, whose
// generators then run on the new patch file.
func (c *change) editPatchFile(ctx context.Context, gen []*unstructured.Unstructured, e *edit) error {
	t := c.req.Target
	objs := make([]*unstructured.Unstructured, len(gen))
	for i, o := range gen {
		objs[i] = o.DeepCopy()
	}
	name := filepath.Join(t.Path, c.cfg.PatchUpdated.PatchFile)
	data, err := fluxyaml.ReadFile(c.dir, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the patch file %s: %w", name, err)
	}
	updated, changed, err := patch.Update(objs, data, e.ref, e.apply, c.Scheme, patch.WithDefaultNamespace(t.Namespace))
	if err != nil {
		return fmt.Errorf("updating the patch file %s: %w", name, err)
	}
	if !changed {
		return nil
	}
	path := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := patch.WriteFileAtomic(path, updated, 0o644); err != nil {
		return err
	}
	return c.session.WriteFile(ctx, name, updated, 0o644)
}

// runUpdaters runs the containerImage or policy updaters of a commandUpdated config in the
// target path of the session's copy of the clone, once per image and per policy of the edit.
func (c *change) runUpdaters(ctx context.Context, e *edit) error {
	targetDir, err := fluxyaml.TargetDir(c.dir, c.req.Target.Path)
	if err != nil {
		return err
	}
	for _, ci := range e.images {
		env, err := fluxyaml.ImageEnv(e.ref, ci.Container, ci.Image)
		if err != nil {
			return err
		}
		if err := fluxyaml.RunUpdaters(ctx, c.session, targetDir, c.cfg, fluxyaml.ImageUpdate, env); err != nil {
			return err
		}
	}
	for _, p := range e.policies {
		if err := fluxyaml.RunUpdaters(ctx, c.session, targetDir, c.cfg, fluxyaml.PolicyUpdate, fluxyaml.PolicyEnv(e.ref, p.Name, p.Value)); err != nil {
			return err
		}
	}
	return nil
}

// copyBack copies what the updaters changed in the session's copy of the clone into the clone,
// after checking (package copyback) that every change is an edit of an existing regular file
// inside the target path: an updater that adds, removes or links files, or writes outside the
// target path (a .git/config, another directory's manifests), gets nothing pushed; so does one
// that changed more than the runner sends back.
func (c *change) copyBack(ctx context.Context) ([]copyback.File, error) {
	changes, err := c.session.Changes(ctx)
	var over *runner.ChangeLimitError
	if errors.As(err, &over) {
		return nil, verificationFailed("nothing was pushed: %s", err.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("reading what the updaters changed: %w", err)
	}
	root, err := os.OpenRoot(c.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	files, err := copyback.Check(root, c.req.Target.Path, changes)
	var refused *copyback.RefusedError
	if errors.As(err, &refused) {
		return nil, verificationFailed("the updaters changed files outside the change, nothing was pushed: %s", refused.Error())
	}
	if err != nil {
		return nil, err
	}
	return files, copyback.Write(root, files)
}

// checkEachFileCounts makes sure that, when the updaters changed several files, each of them
// takes part in the change: with that file alone put back, the manifests must differ from those
// after the change. A file that changes nothing in the manifests would otherwise be committed
// under the bot's name without anybody asking for it. One changed file needs no check: the
// verification already showed that it makes the change.
func (c *change) checkEachFileCounts(ctx context.Context, copied []copyback.File, after []*unstructured.Unstructured) error {
	if len(copied) < 2 {
		return nil
	}
	var idle []string
	for _, f := range copied {
		if err := c.session.WriteFile(ctx, f.Path, f.Previous, f.Mode); err != nil {
			return err
		}
		without, err := c.manifests(ctx)
		if err != nil {
			return verificationFailed("the manifests of path '%s' cannot be generated without the change of %s: %s", c.req.Target.Path, f.Path, err.Error())
		}
		if reflect.DeepEqual(objectMap(without.objects), objectMap(after)) {
			idle = append(idle, f.Path)
		}
		if err := c.session.WriteFile(ctx, f.Path, f.Data, f.Mode); err != nil {
			return err
		}
	}
	if len(idle) > 0 {
		return verificationFailed("the updaters changed files that take no part in the change, nothing was pushed: %s", strings.Join(idle, ", "))
	}
	return nil
}
