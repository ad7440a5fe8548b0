package build

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// Without a .flux.yaml the YAML files under the target path are applied as they are.
func TestBuildRawFiles(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		"apps/deployment.yaml": deploymentYAML,
		"apps/service.yaml":    serviceYAML + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n",
		"apps/README.md":       "not a manifest\n",
		"other/ignored.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
	}))
	b := newBuilder(t, Options{})

	res, err := b.Build(context.Background(), testOwner, art, specOf("./apps"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(res.Objects)).To(Equal([]string{"Deployment//podinfo", "Service//podinfo", "ConfigMap//settings"}))
	g.Expect(res.ConfigFile).To(BeEmpty())
	g.Expect(res.CommandsRun).To(BeZero())
	g.Expect(res.FromCache).To(BeFalse())
	g.Expect(res.Dropped).To(BeEmpty())
}
