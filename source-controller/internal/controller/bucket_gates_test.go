package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A closed gate holds the Bucket: nothing is fetched before its first artifact; later, a changed
// bucket waits (Ready says which revision) while the last artifact stays served, and opening the
// gate releases it within seconds.
func TestBucketWaitsOnItsGates(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	bucketController(t)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	s3.Put(t, "manifests", "app.yaml", "v: 1\n")
	setGate(t, ns, "change-freeze", false)
	key := createBucket(t, ns, "gated", sourcev1.BucketSpec{
		BucketName: "manifests", Endpoint: s3.Endpoint(), Insecure: true, Gates: &gatesapi.Gates{Refs: []string{"change-freeze"}},
	})

	blocked := "True|GateClosed|Reconciliation is blocked as gate '" + ns + "/change-freeze' is closed."
	g.Eventually(bucketCondition(key, gatesapi.BlockedCondition), timeout).Should(Equal(blocked))
	g.Expect(getBucket(g, key).Status.Artifact).To(BeNil())
	g.Expect(s3.Gets("manifests")).To(BeZero())

	first := wantRevision(map[string]string{"app.yaml": "v: 1\n"})
	setGate(t, ns, "change-freeze", true)
	g.Eventually(bucketRevision(key), 5*time.Second).Should(Equal(first))
	g.Eventually(func(g Gomega) *gatesapi.GatesStatus { return getBucket(g, key).Status.Gates }, timeout).
		Should(Equal(&gatesapi.GatesStatus{State: "open"}))

	setGate(t, ns, "change-freeze", false)
	s3.Put(t, "manifests", "app.yaml", "v: 2\n")
	second := wantRevision(map[string]string{"app.yaml": "v: 2\n"})
	pokeBucket(t, key)
	g.Eventually(bucketCondition(key, gatesapi.BlockedCondition), timeout).Should(Equal(blocked))
	g.Eventually(bucketCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|Succeeded|stored artifact: revision '" + first +
		"'; revision '" + second + "' waits for the gates: closed (change-freeze)"))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"app.yaml": "v: 1\n"}))
	g.Expect(getBucket(g, key).Status.Gates.WaitingRevision).To(Equal(second))

	setGate(t, ns, "change-freeze", true)
	g.Eventually(bucketRevision(key), 5*time.Second).Should(Equal(second))
	g.Expect(fetchBucketArtifact(t, key)).To(Equal(map[string]string{"app.yaml": "v: 2\n"}))
}
