package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// kustomizeBuild renders a kustomization with the real kustomize binary.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "kustomize"), "build", dir).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("kustomize build %s: %s", dir, ee.Stderr)
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "run `make tools` for bin/kustomize")
	return out
}

func TestDeployDefaultIsAcceptedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects, err := ssautils.ReadObjects(bytes.NewReader(kustomizeBuild(t, filepath.Join(env.Root, "deploy", "default"))))
	g.Expect(err).NotTo(HaveOccurred())

	poller := polling.NewStatusPoller(env.Client, env.Client.RESTMapper(), polling.Options{})
	manager := ssa.NewResourceManager(env.Client, poller, ssa.Owner{Field: "sluice-e2e", Group: "e2e.sluice.dev"})
	changes, err := manager.ApplyAllStaged(ctx, objects, ssa.DefaultApplyOptions())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes.Entries).To(HaveLen(len(objects)))

	for _, obj := range objects {
		got := obj.DeepCopy()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed(), ssautils.FmtUnstructured(obj))
		if obj.GetKind() != "Namespace" && obj.GetKind() != "CustomResourceDefinition" &&
			!strings.HasPrefix(obj.GetKind(), "ClusterRole") {
			g.Expect(got.GetNamespace()).To(Equal("sluice-system"), ssautils.FmtUnstructured(obj))
		}
	}

	for _, name := range harness.Controllers {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "sluice-system", Name: name}, d)).To(Succeed())
		c := d.Spec.Template.Spec.Containers[0]
		g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(name))
		g.Expect(*d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
		g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		g.Expect(c.Resources.Requests).NotTo(BeEmpty())
		// Every flag the Deployment passes is one the binary has.
		help := controllerHelp(t, name)
		for _, arg := range c.Args {
			flag, _, _ := strings.Cut(arg, "=")
			g.Expect(help).To(ContainSubstring(flag+" "), "%s passes %s, which the binary does not have", name, flag)
		}
	}

	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "sluice-system", Name: "source-controller"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(80))
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "sluice-system", Name: "source-controller"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Ports).To(ContainElement(HaveField("ContainerPort", BeEquivalentTo(9090))))
	g.Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/data")))
}

// A CRD generated into deploy/crds but missing from its kustomization would never be deployed.
func TestCRDKustomizationListsEveryGeneratedCRD(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(env.Root, "deploy", "crds")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var k struct {
		Resources []string `json:"resources"`
	}
	g.Expect(yaml.Unmarshal(raw, &k)).To(Succeed())

	generated, err := filepath.Glob(filepath.Join(dir, "*_*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generated).NotTo(BeEmpty())
	var names []string
	for _, f := range generated {
		names = append(names, filepath.Base(f))
	}
	g.Expect(k.Resources).To(ConsistOf(names))
}
