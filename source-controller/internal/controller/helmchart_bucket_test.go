package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A chart from a directory of a Bucket's artifact, as from a GitRepository's: packaged, and
// packaged again when the bucket's revision changes (reconcileStrategy Revision).
func TestHelmChartFromBucket(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	dir := t.TempDir()
	testserver.WriteChartDir(t, dir, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	for key, content := range chartFiles(t, dir, "charts/podinfo") {
		s3.Put(t, "charts", key, content)
	}
	bucketKey := createBucket(t, ns, "charts", sourcev1.BucketSpec{BucketName: "charts", Endpoint: s3.Endpoint(), Insecure: true})
	g.Eventually(bucketRevision(bucketKey), timeout).ShouldNot(BeEmpty())

	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "./charts/podinfo", ReconcileStrategy: sourcev1.ReconcileStrategyRevision,
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.BucketKind, Name: "charts"},
	})
	first := bucketRevision(bucketKey)(g)
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"True|ChartPackageSucceeded|packaged 'podinfo' chart with version '6.0.3+" + revisionMetadata(first) + "'"))
	g.Expect(getChart(g, key).Status.ObservedSourceArtifactRevision).To(Equal(first))

	s3.Put(t, "charts", "charts/podinfo/values.yaml", "replicaCount: 2\n")
	updateBucket(t, bucketKey, func(s *sourcev1.BucketSpec) { s.Prefix = "charts/" })
	g.Eventually(func(g Gomega) string { return getChart(g, key).Status.ObservedSourceArtifactRevision }, timeout).
		ShouldNot(Equal(first))
	g.Expect(fetchChartValues(t, getChart(g, key).Status.Artifact.URL)).To(HaveKeyWithValue("replicaCount", BeNumerically("==", 2)))
}
