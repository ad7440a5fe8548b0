package update

import (
	"context"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
)

// runUpdaters runs the containerImage or policy updaters of a commandUpdated config in the
// target path of the session's copy of the clone, once per policy.
func (c *change) runUpdaters(ctx context.Context) error {
	spec := c.req.Update.Spec
	targetDir, err := fluxyaml.TargetDir(c.dir, c.req.Target.Path)
	if err != nil {
		return err
	}
	if ci := spec.ContainerImage; ci != nil {
		env, err := fluxyaml.ImageEnv(c.ref, ci.Container, ci.Image)
		if err != nil {
			return err
		}
		return fluxyaml.RunUpdaters(ctx, c.session, targetDir, c.cfg, fluxyaml.ImageUpdate, env)
	}
	for _, p := range spec.Policies {
		if err := fluxyaml.RunUpdaters(ctx, c.session, targetDir, c.cfg, fluxyaml.PolicyUpdate, fluxyaml.PolicyEnv(c.ref, p.Name, p.Value)); err != nil {
			return err
		}
	}
	return nil
}
