package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// spec.ref.semverFilter narrows the tags of the semver range (Flux's release-candidate
// channel); a filter that is not a regular expression stalls with a message.
func TestOCIRepositorySemverFilter(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	registry.PushArtifact(t, "manifests/app:1.1.0", map[string]string{"app.yaml": "v: 1.1\n"}, nil)
	rc := registry.PushArtifact(t, "manifests/app:1.2.0-rc.1", map[string]string{"app.yaml": "v: 1.2-rc\n"}, nil)
	registry.PushArtifact(t, "manifests/app:1.2.0-beta.1", map[string]string{"app.yaml": "v: 1.2-beta\n"}, nil)
	create := func(name string, ref sourcev1.OCIRepositoryRef) client.ObjectKey {
		obj := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: sourcev1.OCIRepositorySpec{
			URL: "oci://" + registry.Host() + "/manifests/app", Insecure: true, Reference: &ref, Interval: metav1.Duration{Duration: time.Hour}}}
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		return client.ObjectKeyFromObject(obj)
	}

	candidates := create("rc", sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0-0", SemverFilter: ".*-rc.*"})
	g.Eventually(ociRevision(candidates), timeout).Should(Equal("1.2.0-rc.1@" + rc))

	bad := create("bad", sourcev1.OCIRepositoryRef{SemVer: "1.x", SemverFilter: "(rc"})
	g.Eventually(func(g Gomega) bool { return conditions.IsStalled(getOCIRepo(g, bad)) }, timeout).Should(BeTrue())
	g.Expect(conditions.GetMessage(getOCIRepo(g, bad), meta.ReadyCondition)).To(ContainSubstring("semverFilter '(rc' is not a regular expression"))

	none := create("none", sourcev1.OCIRepositoryRef{SemVer: "1.x", SemverFilter: "-hotfix$"})
	g.Eventually(func(g Gomega) string { return conditions.GetMessage(getOCIRepo(g, none), meta.ReadyCondition) }, timeout).
		Should(ContainSubstring("no tag matching semverFilter '-hotfix$' is in the semver range '1.x'"))
}
