package controller

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/events"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sluice-gitops/sluice/shared/testenv"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// bucketController runs the Bucket reconciler against the suite's API server and storage for
// the test, in a manager of its own that stops (and stops writing) before the test ends.
func bucketController(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: k8s.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	recorder, err := events.NewRecorder(mgr, ctrl.Log, "", ControllerName)
	g.Expect(err).NotTo(HaveOccurred())
	r := &BucketReconciler{SourceReconciler: SourceReconciler{
		Client: mgr.GetClient(), EventRecorder: recorder, Storage: store, ControllerName: ControllerName,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	g.Expect(r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: ptr.To(true)})).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func createBucket(t *testing.T, ns, name string, spec sourcev1.BucketSpec) client.ObjectKey {
	t.Helper()
	if spec.Interval.Duration == 0 {
		spec.Interval = metav1.Duration{Duration: time.Hour}
	}
	obj := &sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

func getBucket(g Gomega, key client.ObjectKey) *sourcev1.Bucket {
	obj := &sourcev1.Bucket{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// updateBucket changes the spec (a new generation, reconciled at once).
func updateBucket(t *testing.T, key client.ObjectKey, change func(*sourcev1.BucketSpec)) {
	t.Helper()
	g := NewWithT(t)
	obj := getBucket(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	change(&obj.Spec)
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

// pokeBucket asks for a reconcile now, as `flux reconcile source bucket` does.
func pokeBucket(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testenv.Poke(t, k8s, &sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
}

// bucketCondition is condition for a Bucket.
func bucketCondition(key client.ObjectKey, t string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getBucket(g, key)
		return observedCondition(obj, obj.Status.ObservedGeneration, t)
	}
}

func bucketRevision(key client.ObjectKey) func(g Gomega) string {
	return func(g Gomega) string {
		if a := getBucket(g, key).Status.Artifact; a != nil {
			return a.Revision
		}
		return ""
	}
}

// bucketObserved waits until the Bucket has handled the last reconcile request.
func bucketObserved(t *testing.T, key client.ObjectKey) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) bool {
		obj := getBucket(g, key)
		return obj.Annotations[meta.ReconcileRequestAnnotation] == obj.Status.LastHandledReconcileAt
	}, timeout).Should(BeTrue())
}

// wantRevision is the revision Flux gives a bucket of these objects (key → content) uploaded
// whole: sha256 over "<key> <md5 of content>\n" in key order.
func wantRevision(objects map[string]string) string {
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		sum := md5.Sum([]byte(objects[k]))
		fmt.Fprintf(h, "%s %s\n", k, hex.EncodeToString(sum[:]))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func fetchBucketArtifact(t *testing.T, key client.ObjectKey) map[string]string {
	t.Helper()
	return fetchArtifactOf(t, getBucket(NewWithT(t), key).Status.Artifact)
}
