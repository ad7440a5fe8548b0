package controller

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The docker-config Secret of an OCIArtifactTag provider may name the registry by URL
// ("https://host", as `docker login` writes it) and hold an entry for a longer path of another
// repository: the entry that contains spec.url is the one used.
func TestInputProviderOCIArtifactTagHTTPSKey(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	const user, password = "puller", "rsip-https-key-s3cret"
	registry := testserver.NewRegistry(t, testserver.RegistryOptions{Username: user, Password: password})
	digest := registry.PushArtifact(t, "apps/podinfo:1.0.0", map[string]string{"app.yaml": "v1\n"}, nil)
	auth := func(password string) map[string]string {
		return map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	}
	config, err := json.Marshal(map[string]any{"auths": map[string]any{
		"https://" + registry.Host():    auth(password),
		registry.Host() + "/apps/other": auth("wrong"),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	data := map[string][]byte{corev1.DockerConfigJsonKey: config}
	rsipSecret(t, ns, "registry-auth", corev1.SecretTypeDockerConfigJson, data)

	obj := rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: https-key
spec:
  type: OCIArtifactTag
  url: oci://%s/apps/podinfo
  insecure: true
  secretRef:
    name: registry-auth
`, registry.Host()))
	obj = rsipReady(t, client.ObjectKeyFromObject(obj))
	g.Expect(rsipTags(g, obj)).To(Equal([]string{"1.0.0@" + digest}))
}
