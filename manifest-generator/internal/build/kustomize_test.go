package build

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The --git-path=staging example of docs/fluxyaml.md: .flux.yaml at the root, `kustomize build .` run in
// staging, the real kustomize.
func TestBuildKustomizeStagingLayout(t *testing.T) {
	requireKustomize(t)
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, stagingLayout("version: 1\ncommandUpdated:\n  generators:\n    - command: kustomize build .\n")))
	b := newBuilder(t, Options{})

	res, err := b.Build(context.Background(), testOwner, art, specOf("./staging"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(res.Objects)).To(ConsistOf("Deployment/staging/staging-podinfo", "Service/staging/staging-podinfo"))
	g.Expect(res.ConfigFile).To(Equal(".flux.yaml"))
	g.Expect(res.CommandsRun).To(Equal(1))
	g.Expect(res.FromCache).To(BeFalse())

	res, err = b.Build(context.Background(), testOwner, art, specOf("production"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(res.Objects)).To(Equal([]string{"Deployment/production/podinfo"}))
	replicas, _, _ := unstructured.NestedInt64(res.Objects[0].Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(2)))
}
