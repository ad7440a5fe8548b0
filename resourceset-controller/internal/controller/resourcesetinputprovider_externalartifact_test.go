package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// createArtifact creates an ExternalArtifact, as Flux's ArtifactGenerator would, with the
// artifact of revision in its status (none when revision is empty).
func createArtifact(t *testing.T, ns, name string, labels map[string]string, revision string) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	a := &unstructured.Unstructured{}
	a.SetGroupVersionKind(externalArtifactGVK)
	a.SetNamespace(ns)
	a.SetName(name)
	a.SetLabels(labels)
	g.Expect(unstructured.SetNestedMap(a.Object, map[string]any{"kind": "ArtifactGenerator", "name": "monorepo"}, "spec", "sourceRef")).To(Succeed())
	g.Expect(k8s.Create(context.Background(), a)).To(Succeed())
	if revision != "" {
		setArtifactRevision(t, a, revision)
	}
	return a
}

func setArtifactRevision(t *testing.T, a *unstructured.Unstructured, revision string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(unstructured.SetNestedMap(a.Object, map[string]any{
		"digest": "sha256:0000", "lastUpdateTime": time.Now().UTC().Format(time.RFC3339), "path": "x.tar.gz",
		"revision": revision, "url": "http://generator.flux-system.svc/x.tar.gz",
	}, "status", "artifact")).To(Succeed())
	g.Expect(k8s.Status().Update(context.Background(), a)).To(Succeed())
}

// An ExternalArtifact provider exports one input per selected artifact, with flux-operator's
// keys (id, name, namespace, revision) and the artifact's labels, and follows a new revision at
// once (the artifacts are watched; its interval is 10m).
func TestInputProviderExternalArtifactExportsSelectedArtifacts(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	auth := createArtifact(t, ns, "dev-auth", map[string]string{"env": "dev", "app": "auth"}, "main@sha1:aaa")
	createArtifact(t, ns, "dev-pay", map[string]string{"env": "dev", "app": "pay"}, "")
	createArtifact(t, ns, "prod-auth", map[string]string{"env": "prod", "app": "auth"}, "main@sha1:bbb")

	obj := rsipCreate(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: apps
spec:
  type: ExternalArtifact
  selectors:
  - matchLabels:
      env: dev
  - name: dev-auth
`)
	key := client.ObjectKeyFromObject(obj)
	got := rsipInputs(g, rsipReady(t, key))
	g.Expect(got).To(Equal([]map[string]any{
		{"id": inputs.ID(ns + "/dev-auth"), "name": "dev-auth", "namespace": ns, "revision": "main@sha1:aaa", "env": "dev", "app": "auth"},
		{"id": inputs.ID(ns + "/dev-pay"), "name": "dev-pay", "namespace": ns, "env": "dev", "app": "pay"},
	}))

	setArtifactRevision(t, auth, "main@sha1:ccc")
	g.Eventually(func(g Gomega) any {
		return rsipInputs(g, rsipGet(g, key))[0]["revision"]
	}, 5*time.Second).Should(Equal("main@sha1:ccc"))
}

// Artifacts of another namespace are read as the provider's account: one that may not read
// them gets a condition that says so, and one that may exports them.
func TestInputProviderExternalArtifactReadsOtherNamespacesAsTheAccount(t *testing.T) {
	g := NewWithT(t)
	other := env.Namespace(t)
	createArtifact(t, other, "shared", map[string]string{"team": "platform"}, "v1@sha256:111")

	locked := env.Namespace(t) // its default account "tenant" has no rights
	manifest := fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: shared
spec:
  type: ExternalArtifact
  selectors:
  - namespace: %s
    matchLabels:
      team: platform
`, other)
	key := client.ObjectKeyFromObject(rsipCreate(t, locked, manifest))
	g.Expect(rsipFailed(t, key)).To(Equal(fmt.Sprintf("spec.selectors[0]: the provider's account system:serviceaccount:%s:tenant "+
		"may not list the ExternalArtifacts of '%s': grant it, or select in the provider's namespace", locked, other)))
	g.Expect(rsipGet(g, key).Status.ExportedInputs).To(BeEmpty())

	allowed := tenantNamespace(t) // "tenant" is cluster-admin here
	key = client.ObjectKeyFromObject(rsipCreate(t, allowed, manifest))
	g.Expect(rsipInputs(g, rsipReady(t, key))).To(ConsistOf(HaveKeyWithValue("name", "shared")))

	// "*" selects in every namespace, by the same account.
	all := client.ObjectKeyFromObject(rsipCreate(t, allowed, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: everywhere
spec:
  type: ExternalArtifact
  selectors:
  - namespace: "*"
    matchLabels:
      team: platform
`))
	g.Expect(rsipInputs(g, rsipReady(t, all))).To(ContainElement(HaveKeyWithValue("namespace", other)))
}
