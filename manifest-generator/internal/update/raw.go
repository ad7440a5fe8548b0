package update

import (
	"fmt"
	"os"
	"path/filepath"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/patch"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// editRaw edits the file that holds the workload in place, keeping comments and layout.
func (c *change) editRaw() error {
	t, spec := c.req.Target, c.req.Update.Spec
	objs, err := fluxyaml.ReadRawObjects(c.dir, t.Path, c.Limits)
	if err != nil {
		return err
	}
	file := ""
	for _, o := range objs {
		if c.ref.Matches(o.Object, t.Namespace) {
			file = o.File
			break
		}
	}
	if file == "" {
		return fmt.Errorf("workload %s does not exist in the files of path '%s'", c.ref, t.Path)
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
	updated, changed, err := workload.InFile(data, c.ref, t.Namespace, func(node *kyaml.RNode) error {
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
