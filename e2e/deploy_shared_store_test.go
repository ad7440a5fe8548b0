package e2e

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The shared-artifact-store component, used as deploy/README.md says, runs two source-controller
// replicas on an S3-compatible bucket: both behind the artifact Service (not the leader alone),
// the store's address from its ConfigMap and keys from its Secret, the URL keys from one Secret;
// it changes nothing else, and applying deploy/default again brings one replica back.
func TestDeploySharedArtifactStoreComponent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	defaults := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	applyObjects(t, defaults)
	t.Cleanup(func() { applyObjects(t, defaults) })

	objects := buildObjects(t, componentOverlay(t, "shared-artifact-store"))
	changed, added := compareObjects(defaults, objects)
	g.Expect(changed).To(ConsistOf("Deployment/sluice-system/source-controller", "Service/sluice-system/source-controller"))
	g.Expect(added).To(BeEmpty(), "the overlay generates the store's ConfigMap")

	applyObjects(t, objects)
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "source-controller"}, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(2))
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Args).To(ContainElements("--storage-backend=s3", "--storage-s3-endpoint=$(STORE_ENDPOINT)",
		"--storage-s3-bucket=$(STORE_BUCKET)", "--storage-s3-insecure=$(STORE_INSECURE)",
		"--storage-s3-secret-ref=source-controller-store", "--artifact-url-keys-secret-ref=source-controller-url-keys"))
	fromConfig := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			fromConfig[e.Name] = e.ValueFrom.ConfigMapKeyRef.Name + "/" + e.ValueFrom.ConfigMapKeyRef.Key
		}
	}
	g.Expect(fromConfig).To(Equal(map[string]string{"STORE_ENDPOINT": "source-controller-store/endpoint",
		"STORE_BUCKET": "source-controller-store/bucket", "STORE_INSECURE": "source-controller-store/insecure"}))
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(d), svc)).To(Succeed())
	g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"app.kubernetes.io/name": "source-controller"}),
		"every replica serves every artifact")

	applyObjects(t, defaults)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
}
