package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// spec.automation.secretRef may name the registry by URL ("https://host", as `docker login`
// writes it), next to an entry for a longer path of another repository: the entry that contains
// the image's repository is used, and the new tag is released.
func TestAutomationDockerConfigHTTPSKey(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bob", Password: "s3cret"})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true"})})
	auth := func(password string) map[string]string {
		return map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("bob:" + password))}
	}
	config, err := json.Marshal(map[string]any{"auths": map[string]any{
		"https://" + reg.Host():    auth("s3cret"),
		reg.Host() + "/apps/other": auth("wrong"),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "registry-auth"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: config}})).To(Succeed())

	key := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	gen := &generatorv1.ManifestGeneration{}
	g.Expect(k8s.Get(ctx, key, gen)).To(Succeed())
	patch := client.MergeFrom(gen.DeepCopy())
	gen.Spec.Automation = &generatorv1.Automation{Interval: &metav1.Duration{Duration: time.Second}, Insecure: true,
		SecretRef: &meta.LocalObjectReference{Name: "registry-auth"}}
	g.Expect(k8s.Patch(ctx, gen, patch)).To(Succeed())
	f.publishHead(t)
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(HaveField("LatestTag", "1.0.0")))

	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	g.Expect(releases(f.ns)(g)[0].Spec.ContainerImage.Image).To(Equal(image + ":1.1.0"))
	g.Expect(conditions.Get(getGeneration(g, key), generatorv1.AutomationFailedCondition)).To(BeNil())
}
