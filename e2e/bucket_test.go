package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The source-controller binary serves a Bucket: the objects under its prefix, signed for with the
// keys of its Secret, become an artifact on its artifact server, and its readiness reaches the
// metrics of Flux's dashboards.
func TestSourceControllerServesBuckets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	c := startController(t, "source-controller", kubeconfigIn(t, dir), dir)

	s3 := testserver.NewS3(t, testserver.S3Options{AccessKey: "flux", SecretKey: "s3cret"})
	s3.Put(t, "manifests", "prod/app.yaml", "kind: ConfigMap\n")
	s3.Put(t, "manifests", "staging/app.yaml", "kind: Secret\n")
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bucket-e2e"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bucket-e2e", Name: "keys"},
		Data:       map[string][]byte{"accesskey": []byte("flux"), "secretkey": []byte("s3cret")},
	})).To(Succeed())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Bucket",
		"metadata": map[string]any{"namespace": "bucket-e2e", "name": "prod"},
		"spec": map[string]any{
			"bucketName": "manifests", "endpoint": s3.Endpoint(), "insecure": true, "prefix": "prod/",
			"secretRef": map[string]any{"name": "keys"}, "interval": "1h",
		},
	}}
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())

	var a map[string]any
	g.Eventually(func() any {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		a, _, _ = unstructured.NestedMap(obj.Object, "status", "artifact")
		return a["revision"]
	}, time.Minute).Should(HavePrefix("sha256:"))
	g.Expect(a["url"]).To(MatchRegexp(`^http://` + c.StorageAddr + `/[A-Za-z0-9_-]{22}/bucket/bucket-e2e/prod/`))
	out := filepath.Join(t.TempDir(), "x")
	g.Expect((&artifact.Fetcher{}).Fetch(ctx, a["url"].(string), a["digest"].(string), out)).To(Succeed())
	entries, err := os.ReadDir(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1)) // prod/ only
	g.Expect(filepath.Join(out, "prod", "app.yaml")).To(BeAnExistingFile())
	g.Eventually(func() string { return get(t, "http://"+c.MetricsAddr+"/metrics") }, 10*time.Second).Should(ContainSubstring(
		`gotk_reconcile_condition{kind="Bucket",name="prod",namespace="bucket-e2e",status="True",type="Ready"} 1`))
}
