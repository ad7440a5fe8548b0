package update

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
)

// editPatchFile records the change in the patch file of a patchUpdated config, creating it
// when missing, from the generators' output gen: in the clone, and in the session, whose
// generators then run on the new patch file.
func (c *change) editPatchFile(ctx context.Context, gen []*unstructured.Unstructured) error {
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
	updated, changed, err := patch.Update(objs, data, c.ref, c.changeObject, c.Scheme, patch.WithDefaultNamespace(t.Namespace))
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
