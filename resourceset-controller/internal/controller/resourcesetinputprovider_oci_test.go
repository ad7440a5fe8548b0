package controller

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// rsipDockerConfig is the `.dockerconfigjson` of a kubernetes.io/dockerconfigjson Secret with
// basic credentials for host, as `kubectl create secret docker-registry` writes it.
func rsipDockerConfig(host, username, password string) map[string][]byte {
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"username": username, "password": password, "auth": auth},
	}})
	return map[string][]byte{corev1.DockerConfigJsonKey: cfg}
}

// rsipTags are the tag and digest of each exported input, in order.
func rsipTags(g Gomega, obj *rsv1.ResourceSetInputProvider) []string {
	var out []string
	for _, in := range rsipInputs(g, obj) {
		out = append(out, fmt.Sprintf("%v@%v", in["tag"], in["digest"]))
	}
	return out
}

// The tags of a registry behind basic auth (credentials from a dockerconfigjson Secret): the
// semver range selects, the highest version comes first, the limit cuts; each input carries an id,
// the tag, the manifest digest of the tag and the default values (the tag's own keys win). A tag
// pushed later shows up after a reconcile request. When the credentials are replaced by wrong
// ones, the provider fails with the registry's answer and the ResourceSets keep the last exported
// inputs; good credentials recover it. The credentials never reach events or logs.
func TestInputProviderOCIArtifactTagWithCredentials(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	const user, password = "puller", "rsip-oci-s3cret-f00d"
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: user, Password: password})
	files := func(v string) map[string]string { return map[string]string{"app.yaml": "version: " + v + "\n"} }
	digests := map[string]string{}
	for _, tag := range []string{"0.9.0", "1.0.0", "1.1.0", "1.2.0-rc.1", "1.2.0", "2.0.0", "latest"} {
		digests[tag] = registry.PushArtifact(t, "apps/podinfo:"+tag, files(tag), nil)
	}
	creds := rsipSecret(t, ns, "registry-auth", corev1.SecretTypeDockerConfigJson, rsipDockerConfig(registry.Host(), user, password))

	obj := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: podinfo-tags
spec:
  type: OCIArtifactTag
  url: oci://%s/apps/podinfo
  insecure: true
  secretRef:
    name: registry-auth
  filter:
    semver: ">=1.0.0 <2.0.0"
    limit: 2
  defaultValues:
    chart: podinfo
    tag: not-a-tag
`, registry.Host()))
	key := client.ObjectKeyFromObject(obj)

	obj = rsipReady(t, key)
	g.Expect(rsipTags(g, obj)).To(Equal([]string{"1.2.0@" + digests["1.2.0"], "1.1.0@" + digests["1.1.0"]}))
	for _, in := range rsipInputs(g, obj) {
		g.Expect(in).To(HaveKeyWithValue("chart", "podinfo"))
		g.Expect(in).To(HaveKeyWithValue("id", inputs.ID(in["tag"].(string))))
		g.Expect(in).To(HaveLen(4))
	}
	g.Expect(rsipEventFor(t, key, obj.Status.LastExportedRevision)).To(Equal("ReconciliationSucceeded: exported 2 inputs with revision " + obj.Status.LastExportedRevision))

	// A new version shows up at the next reconcile.
	digests["1.3.0"] = registry.PushArtifact(t, "apps/podinfo:1.3.0", files("1.3.0"), nil)
	poke(t, obj)
	obj = rsipReady(t, key)
	g.Expect(rsipTags(g, obj)).To(Equal([]string{"1.3.0@" + digests["1.3.0"], "1.2.0@" + digests["1.2.0"]}))
	good := obj.Status.DeepCopy()
	rsipEventFor(t, key, good.LastExportedRevision)

	// Wrong credentials: Ready=False with the registry's answer, a Warning event, the last
	// exported inputs stay.
	creds.Data = rsipDockerConfig(registry.Host(), user, "wrong-password-b4d")
	g.Expect(k8s.Update(t.Context(), creds)).To(Succeed())
	poke(t, obj)
	msg := rsipFailed(t, key)
	g.Expect(msg).To(ContainSubstring("UNAUTHORIZED"))
	g.Expect(msg).To(ContainSubstring(registry.Host() + "/apps/podinfo"))
	obj = rsipGet(g, key)
	g.Expect(obj.Status.ExportedInputs).To(Equal(good.ExportedInputs))
	g.Expect(obj.Status.LastExportedRevision).To(Equal(good.LastExportedRevision))
	g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
	g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement(HavePrefix("Warning ReconciliationFailed: ")))

	// Good credentials again: ready, same revision.
	creds.Data = rsipDockerConfig(registry.Host(), user, password)
	g.Expect(k8s.Update(t.Context(), creds)).To(Succeed())
	poke(t, obj)
	obj = rsipReady(t, key)
	g.Expect(obj.Status.LastExportedRevision).To(Equal(good.LastExportedRevision))

	for _, e := range rsipEventMessages(key)(g) {
		g.Expect(e).NotTo(ContainSubstring(password))
		g.Expect(e).NotTo(ContainSubstring("wrong-password-b4d"))
	}
	rsipLogsFree(t, password, "wrong-password-b4d",
		base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

// Without semver, includeTag and excludeTag select the tags, sorted in descending order (newest
// first for date-stamped tags of equal width). A registry served over HTTPS with a private CA is
// trusted through certSecretRef's ca.crt; without it the provider fails.
func TestInputProviderOCIArtifactTagRegexFilterAndCA(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{TLS: true})
	digests := map[string]string{}
	for _, tag := range []string{"main-20260101", "main-20260203", "main-20260202-wip", "feat-20260301", "main-20251231"} {
		digests[tag] = registry.PushArtifact(t, "builds/app:"+tag, map[string]string{"tag": tag}, nil)
	}
	rsipSecret(t, ns, "registry-ca", corev1.SecretTypeOpaque, map[string][]byte{"ca.crt": registry.CAPEM()})
	manifest := func(name, certRef string) string {
		return fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: OCIArtifactTag
  url: oci://%s/builds/app
  %s
  filter:
    includeTag: "^main-"
    excludeTag: "-wip$"
`, name, registry.Host(), certRef)
	}

	trusted := client.ObjectKeyFromObject(rsipCreate(t, ns, manifest("trusted", "certSecretRef: {name: registry-ca}")))
	obj := rsipReady(t, trusted)
	g.Expect(rsipTags(g, obj)).To(Equal([]string{
		"main-20260203@" + digests["main-20260203"],
		"main-20260101@" + digests["main-20260101"],
		"main-20251231@" + digests["main-20251231"],
	}))

	untrusted := client.ObjectKeyFromObject(rsipCreate(t, ns, manifest("untrusted", "")))
	g.Expect(rsipFailed(t, untrusted)).To(ContainSubstring("certificate"))
	g.Expect(rsipGet(g, untrusted).Status.ExportedInputs).To(BeEmpty())
}

// A filter that does not parse cannot be fixed by retrying: Ready=False and Stalled=True say what
// is wrong, the spec is observed, and no Reconciling is left behind. Fixing the spec recovers.
func TestInputProviderInvalidFilterStalls(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{})
	digest := registry.PushArtifact(t, "apps/web:v1.0.0", map[string]string{"a": "b"}, nil)

	obj := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: bad-filter
spec:
  type: OCIArtifactTag
  url: oci://%s/apps/web
  insecure: true
  filter:
    includeTag: "^v(1"
`, registry.Host()))
	key := client.ObjectKeyFromObject(obj)

	g.Eventually(rsipCondition(key, meta.StalledCondition), timeout).Should(
		Equal("True|ReconciliationFailed|invalid filter.includeTag \"^v(1\": error parsing regexp: missing closing ): `^v(1`"))
	obj = rsipGet(g, key)
	ready := conditions.Get(obj, meta.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(meta.ReconciliationFailedReason))
	g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
	g.Expect(conditions.Get(obj, meta.ReconcilingCondition)).To(BeNil())
	g.Eventually(rsipEventMessages(key), timeout).Should(ContainElement(ContainSubstring("Warning ReconciliationFailed: invalid filter.includeTag")))

	rsipUpdate(t, key, func(p *rsv1.ResourceSetInputProvider) { p.Spec.Filter.IncludeTag = "^v1" })
	obj = rsipReady(t, key)
	g.Expect(rsipTags(g, obj)).To(Equal([]string{"v1.0.0@" + digest}))
	g.Expect(conditions.Get(obj, meta.StalledCondition)).To(BeNil())
}
