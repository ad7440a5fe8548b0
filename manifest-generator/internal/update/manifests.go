package update

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

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
func (c *change) changeObject(u *unstructured.Unstructured) (bool, error) {
	spec := c.req.Update.Spec
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
