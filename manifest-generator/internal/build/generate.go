package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
)

// generate produces the objects of target (clean, relative to root) from the checkout root:
// with the .flux.yaml that governs target, its generators run by x, or from its raw YAML files
// when there is none.
func generate(ctx context.Context, x fluxyaml.Executor, root, target string, scheme *runtime.Scheme, limits fluxyaml.Limits) (*Result, error) {
	configPath, found, err := fluxyaml.Find(root, target)
	if err != nil {
		return nil, contentError(err)
	}
	if !found {
		objs, err := fluxyaml.ReadRaw(root, target, limits)
		if err != nil {
			return nil, contentError(err)
		}
		if err := limits.CheckObjects("path '"+target+"'", len(objs)); err != nil {
			return nil, err
		}
		return &Result{Objects: objs}, nil
	}

	data, err := fluxyaml.ReadFile(root, configPath)
	if err != nil {
		return nil, contentError(fmt.Errorf("reading %s: %w", configPath, err))
	}
	cfg, err := fluxyaml.Parse(data, configPath)
	if err != nil {
		return nil, err // *fluxyaml.ConfigError
	}
	objs, err := fluxyaml.Generate(ctx, x, root, target, configPath, cfg, limits)
	if err != nil {
		var ce *fluxyaml.CommandError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, contentError(err) // *fluxyaml.ManifestError, or the target path
	}
	res := &Result{Objects: objs, ConfigFile: configPath}
	switch {
	case cfg.CommandUpdated != nil:
		res.CommandsRun = len(cfg.CommandUpdated.Generators)
	case cfg.PatchUpdated != nil:
		res.CommandsRun = len(cfg.PatchUpdated.Generators)
		if err := applyPatchFile(res, root, target, configPath, cfg.PatchUpdated.PatchFile, scheme); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// applyPatchFile applies the patch file, relative to the target path, to the generated objects.
// A missing patch file patches nothing: the manifest-generator creates it with the first update.
func applyPatchFile(res *Result, root, target, configPath, patchFile string, scheme *runtime.Scheme) error {
	name := filepath.Join(target, patchFile)
	data, err := fluxyaml.ReadFile(root, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return contentError(fmt.Errorf("reading the patch file %s of %s: %w", name, configPath, err))
	}
	patched, dropped, err := patch.Apply(res.Objects, data, scheme)
	if err != nil {
		return terminal(fmt.Errorf("%s (the patch file of %s): %w", name, configPath, err))
	}
	res.Objects, res.Dropped = patched, dropped
	return nil
}
