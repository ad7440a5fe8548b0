package controller

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A reconcile of an unchanged repository on loopback: read the object, verify the stored
// artifact, list the remote's references (a git http-backend run on the server side), patch
// nothing new. The time includes the API round trips and the server's process start; cpu-ms/op
// is the CPU of this process only (the reconciler and its API client; the Git server's
// processes are children, counted apart).
func BenchmarkGitRepositoryNoOpReconcile(b *testing.B) {
	ctx := context.Background()
	server := testserver.NewGitServer(b, testserver.Options{})
	repo := server.NewRepo(b, "bench")
	files := map[string]string{}
	for i := range 200 {
		files["deploy/app-"+string(rune('a'+i%26))+"/"+time.Duration(i).String()+".yaml"] = "kind: ConfigMap\n"
	}
	repo.Commit(b, "Initial commit", files)

	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench", Labels: map[string]string{directLabel: "true"}},
		Spec:       sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Interval: metav1.Duration{Duration: time.Hour}},
	}
	if err := k8s.Create(ctx, obj); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = k8s.Delete(ctx, obj) }()
	r := &GitRepositoryReconciler{SourceReconciler: SourceReconciler{Client: k8s, EventRecorder: record.NewFakeRecorder(100), Storage: store, ControllerName: ControllerName}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}

	// The first reconcile builds the artifact.
	if _, err := r.Reconcile(ctx, req); err != nil {
		b.Fatal(err)
	}
	if err := k8s.Get(ctx, req.NamespacedName, obj); err != nil || !conditions.IsTrue(obj, meta.ReadyCondition) {
		b.Fatalf("no artifact: %v %v", err, obj.Status.Conditions)
	}
	before := obj.Status.Artifact.Revision

	b.ResetTimer()
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	if err := k8s.Get(ctx, req.NamespacedName, obj); err != nil || obj.Status.Artifact.Revision != before {
		b.Fatalf("the no-op reconcile changed the artifact: %v", err)
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
