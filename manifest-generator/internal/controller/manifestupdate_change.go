package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// updateError is a failure of the change itself (not of Git): its reason, and whether only a
// new spec (or a new commit on the branch) can fix it.
type updateError struct {
	reason   string
	terminal bool
	err      error
}

func (e *updateError) Error() string { return e.err.Error() }
func (e *updateError) Unwrap() error { return e.err }

func verificationFailed(format string, args ...any) error {
	return &updateError{reason: generatorv1.VerificationFailedReason, terminal: true, err: fmt.Errorf(format, args...)}
}

// changeFailed marks an error of the updaters, generators or files: terminal for errors of the
// content or the request, retried for failing commands.
func changeFailed(err error) error {
	var ue *updateError
	if errors.As(err, &ue) {
		return err
	}
	var ce *fluxyaml.CommandError
	terminal := !errors.As(err, &ce)
	return &updateError{reason: generatorv1.ReconciliationFailedReason, terminal: terminal, err: err}
}

// updateMode is how the change is made in the clone.
type updateMode struct {
	configPath string
	cfg        *fluxyaml.Config // nil in raw mode
	// session runs the commands, in the runner, on a copy of the clone without its .git; nil in
	// raw mode, where no command runs.
	session *runner.Session
}

// change makes the requested change in the clone at dir, then verifies it: the manifests of the
// target path regenerated after the change differ from those before in exactly the requested
// field(s) of the workload. Commands never run in the clone: generators and updaters run in the
// runner on a copy of it without .git, and only the files the change verifiably needs are copied
// back. An error leaves nothing to commit.
func (r *ManifestUpdateReconciler) change(ctx context.Context, obj *generatorv1.ManifestUpdate, t updateTarget, dir string) error {
	ref, err := workload.ParseRef(obj.Spec.Workload)
	if err != nil {
		return changeFailed(fmt.Errorf("spec.workload: %w", err))
	}
	var mode updateMode
	configPath, found, err := fluxyaml.Find(dir, t.path)
	if err != nil {
		return changeFailed(err)
	}
	if found {
		data, err := fluxyaml.ReadFile(dir, configPath)
		if err != nil {
			return changeFailed(fmt.Errorf("reading %s: %w", configPath, err))
		}
		if mode.cfg, err = fluxyaml.Parse(data, configPath); err != nil {
			return changeFailed(err)
		}
		mode.configPath = configPath
		mode.session, err = r.Runner.Session(dir, runner.Options{Path: r.Path, Env: t.env, DefaultTimeout: t.timeout,
			MaxOutput: r.MaxOutput, Track: mode.cfg.CommandUpdated != nil})
		if err != nil {
			return err
		}
		defer mode.session.Close()
	}

	before, err := r.manifests(ctx, dir, t, mode)
	if err != nil {
		return changeFailed(err)
	}
	target, err := findWorkload(before.objects, ref, t.namespace)
	if err != nil {
		return changeFailed(fmt.Errorf("%w in the manifests of path '%s' of branch '%s'", err, t.path, t.branch))
	}
	// What the workload must look like after the change.
	want := target.DeepCopy()
	if _, err := changeObject(obj.Spec)(want); err != nil {
		return changeFailed(err)
	}

	var copied []copyback.File
	switch {
	case mode.cfg == nil:
		err = r.changeRaw(dir, t, ref, obj.Spec)
	case mode.cfg.PatchUpdated != nil:
		err = r.changePatchFile(ctx, dir, t, ref, obj.Spec, mode, before.generated)
	case mode.cfg.CommandUpdated != nil:
		if err = r.runUpdaters(ctx, dir, t, ref, obj.Spec, mode); err == nil {
			copied, err = r.copyBack(ctx, mode.session, dir, t)
		}
	default:
		err = fmt.Errorf("%s uses scanForFiles, which has no updaters: the workload cannot be updated", configPath)
	}
	if err != nil {
		return changeFailed(err)
	}

	after, err := r.manifests(ctx, dir, t, mode)
	if err != nil {
		return verificationFailed("the manifests of path '%s' cannot be generated after the change: %s", t.path, err.Error())
	}
	if err := verify(before.objects, after.objects, ref, t.namespace, want); err != nil {
		return err
	}
	return r.checkEachFileCounts(ctx, dir, t, mode, copied, after.objects)
}

// generated are the manifests of the target path: the objects to apply and, with a
// patchUpdated config, the generators' output before the patch file.
type generated struct {
	objects   []*unstructured.Unstructured
	generated []*unstructured.Unstructured
}

// manifests are the objects of the target path: raw YAML, or the generators' output with the
// patch file applied.
func (r *ManifestUpdateReconciler) manifests(ctx context.Context, dir string, t updateTarget, mode updateMode) (generated, error) {
	if mode.cfg == nil {
		objs, err := fluxyaml.ReadRawObjects(dir, t.path)
		if err != nil {
			return generated{}, err
		}
		out := make([]*unstructured.Unstructured, len(objs))
		for i, o := range objs {
			out[i] = o.Object
		}
		return generated{objects: out}, nil
	}
	gen, err := fluxyaml.GenerateObjects(ctx, mode.session, dir, t.path, mode.configPath, mode.cfg, r.Limits)
	if err != nil {
		return generated{}, err
	}
	out := make([]*unstructured.Unstructured, len(gen))
	for i, g := range gen {
		out[i] = g.Object
	}
	res := generated{objects: out, generated: out}
	if mode.cfg.PatchUpdated != nil {
		name := filepath.Join(t.path, mode.cfg.PatchUpdated.PatchFile)
		data, err := fluxyaml.ReadFile(dir, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return res, nil
		case err != nil:
			return generated{}, fmt.Errorf("reading the patch file %s: %w", name, err)
		}
		// patch.Apply works on copies: res.generated stays the generators' output.
		if res.objects, _, err = patch.Apply(out, data, r.Scheme); err != nil {
			return generated{}, fmt.Errorf("%s (the patch file of %s): %w", name, mode.configPath, err)
		}
	}
	return res, nil
}

// findWorkload is the one object ref names.
func findWorkload(objs []*unstructured.Unstructured, ref workload.Ref, namespace string) (*unstructured.Unstructured, error) {
	var found *unstructured.Unstructured
	for _, o := range objs {
		if ref.Matches(o, namespace) {
			if found != nil {
				return nil, fmt.Errorf("workload %s is defined more than once", ref)
			}
			found = o
		}
	}
	if found == nil {
		return nil, fmt.Errorf("workload %s does not exist", ref)
	}
	return found, nil
}

// changeObject applies the requested change to an object.
func changeObject(spec generatorv1.ManifestUpdateSpec) func(*unstructured.Unstructured) (bool, error) {
	return func(u *unstructured.Unstructured) (bool, error) {
		if ci := spec.ContainerImage; ci != nil {
			return workload.SetImage(u, ci.Container, ci.Image)
		}
		changed := false
		for _, p := range spec.Policies {
			if workload.SetPolicy(u, p.Name, p.Value) {
				changed = true
			}
		}
		return changed, nil
	}
}

// changeRaw edits the file that holds the workload in place, keeping comments and layout.
func (r *ManifestUpdateReconciler) changeRaw(dir string, t updateTarget, ref workload.Ref, spec generatorv1.ManifestUpdateSpec) error {
	objs, err := fluxyaml.ReadRawObjects(dir, t.path)
	if err != nil {
		return err
	}
	file := ""
	for _, o := range objs {
		if ref.Matches(o.Object, t.namespace) {
			file = o.File
			break
		}
	}
	if file == "" {
		return fmt.Errorf("workload %s does not exist in the files of path '%s'", ref, t.path)
	}
	path := filepath.Join(dir, filepath.FromSlash(file))
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	data, err := fluxyaml.ReadFile(dir, filepath.FromSlash(file))
	if err != nil {
		return err
	}
	updated, changed, err := workload.InFile(data, ref, t.namespace, func(node *kyaml.RNode) error {
		if ci := spec.ContainerImage; ci != nil {
			_, err := workload.SetImageNode(node, ci.Container, ci.Image)
			return err
		}
		for _, p := range spec.Policies {
			if _, err := workload.SetPolicyNode(node, p.Name, p.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !changed {
		return nil
	}
	return patch.WriteFileAtomic(path, updated, info.Mode().Perm())
}

// changePatchFile records the change in the patch file of a patchUpdated config, creating it
// when missing, from the generators' output gen: in the clone, and in the session, whose
// generators then run on the new patch file.
func (r *ManifestUpdateReconciler) changePatchFile(ctx context.Context, dir string, t updateTarget, ref workload.Ref,
	spec generatorv1.ManifestUpdateSpec, mode updateMode, gen []*unstructured.Unstructured) error {
	objs := make([]*unstructured.Unstructured, len(gen))
	for i, o := range gen {
		objs[i] = o.DeepCopy()
	}
	name := filepath.Join(t.path, mode.cfg.PatchUpdated.PatchFile)
	data, err := fluxyaml.ReadFile(dir, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the patch file %s: %w", name, err)
	}
	updated, changed, err := patch.Update(objs, data, ref, changeObject(spec), r.Scheme, patch.WithDefaultNamespace(t.namespace))
	if err != nil {
		return fmt.Errorf("updating the patch file %s: %w", name, err)
	}
	if !changed {
		return nil
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := patch.WriteFileAtomic(path, updated, 0o644); err != nil {
		return err
	}
	return mode.session.WriteFile(ctx, name, updated, 0o644)
}

// runUpdaters runs the containerImage or policy updaters of a commandUpdated config in the
// target path of the session's copy of the clone, once per policy.
func (r *ManifestUpdateReconciler) runUpdaters(ctx context.Context, dir string, t updateTarget, ref workload.Ref,
	spec generatorv1.ManifestUpdateSpec, mode updateMode) error {
	targetDir, err := fluxyaml.TargetDir(dir, t.path)
	if err != nil {
		return err
	}
	if ci := spec.ContainerImage; ci != nil {
		env, err := fluxyaml.ImageEnv(ref, ci.Container, ci.Image)
		if err != nil {
			return err
		}
		return fluxyaml.RunUpdaters(ctx, mode.session, targetDir, mode.cfg, fluxyaml.ImageUpdate, env)
	}
	for _, p := range spec.Policies {
		if err := fluxyaml.RunUpdaters(ctx, mode.session, targetDir, mode.cfg, fluxyaml.PolicyUpdate, fluxyaml.PolicyEnv(ref, p.Name, p.Value)); err != nil {
			return err
		}
	}
	return nil
}

// verify compares the manifests before and after the change: the workload must now be want,
// and every other object must be as it was.
func verify(before, after []*unstructured.Unstructured, ref workload.Ref, namespace string, want *unstructured.Unstructured) error {
	index := func(objs []*unstructured.Unstructured) map[patch.ID]*unstructured.Unstructured {
		m := make(map[patch.ID]*unstructured.Unstructured, len(objs))
		for _, o := range objs {
			m[patch.IDOf(o)] = o
		}
		return m
	}
	b, a := index(before), index(after)
	var problems []string
	for id, o := range b {
		n, ok := a[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s was removed", describe(o)))
		case ref.Matches(o, namespace):
			if !reflect.DeepEqual(n.Object, want.Object) {
				if reflect.DeepEqual(n.Object, o.Object) && !reflect.DeepEqual(o.Object, want.Object) {
					problems = append(problems, fmt.Sprintf("the requested change of %s is missing", ref))
				} else {
					problems = append(problems, fmt.Sprintf("%s changed in other ways than requested (%s)", ref,
						strings.Join(diffPaths("", want.Object, n.Object), "; ")))
				}
			}
		case !reflect.DeepEqual(n.Object, o.Object):
			problems = append(problems, fmt.Sprintf("%s changed (%s)", describe(o), strings.Join(diffPaths("", o.Object, n.Object), "; ")))
		}
	}
	for id, o := range a {
		if _, ok := b[id]; !ok {
			problems = append(problems, fmt.Sprintf("%s was added", describe(o)))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return verificationFailed("verification of the change failed, nothing was pushed: %s", strings.Join(problems, "; "))
	}
	return nil
}

func describe(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" {
		ns = "<default>"
	}
	return fmt.Sprintf("%s %s/%s", o.GetKind(), ns, o.GetName())
}

// maxDiffPaths bounds the fields a verification failure names.
const maxDiffPaths = 5

// diffPaths names the fields in which got differs from want ("spec.template.spec.containers[1].image
// is busybox:1.36, expected ..." is too much for a condition: only the paths are given), at most
// maxDiffPaths of them. Values are never shown: they may come from anywhere in the repository.
func diffPaths(prefix string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{orRoot(prefix)}
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, diffPaths(p, w[k], g[k])...)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{orRoot(prefix)}
		}
		for i := range w {
			out = append(out, diffPaths(fmt.Sprintf("%s[%d]", prefix, i), w[i], g[i])...)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{orRoot(prefix)}
		}
	}
	if len(out) > maxDiffPaths {
		out = append(out[:maxDiffPaths], "…")
	}
	return out
}

func orRoot(p string) string {
	if p == "" {
		return "the whole object"
	}
	return p
}
