package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/status/statustest"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Every source kind follows the start every reconciler shares (shared/status.Preamble):
// Reconciling for a new generation, the request echoed (also while suspended), the finalizer
// added (also to an object created suspended). The sources point at nothing that answers: the
// rules hold whatever the steps do.
func TestSourceKindsFollowTheSharedRules(t *testing.T) {
	hour := metav1.Duration{Duration: time.Hour}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	for _, tc := range []struct {
		kind string
		new  func(ns, name string) client.Object
	}{{
		kind: sourcev1.GitRepositoryKind,
		new: func(ns, name string) client.Object {
			return &sourcev1.GitRepository{ObjectMeta: meta(ns, name),
				Spec: sourcev1.GitRepositorySpec{URL: "http://127.0.0.1:1/app.git", Interval: hour}}
		},
	}, {
		kind: sourcev1.HelmRepositoryKind,
		new: func(ns, name string) client.Object {
			return &sourcev1.HelmRepository{ObjectMeta: meta(ns, name),
				Spec: sourcev1.HelmRepositorySpec{URL: "http://127.0.0.1:1/charts", Interval: hour}}
		},
	}, {
		kind: sourcev1.HelmChartKind,
		new: func(ns, name string) client.Object {
			return &sourcev1.HelmChart{ObjectMeta: meta(ns, name), Spec: sourcev1.HelmChartSpec{Chart: "podinfo", Interval: hour,
				SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "missing"}}}
		},
	}, {
		kind: sourcev1.OCIRepositoryKind,
		new: func(ns, name string) client.Object {
			return &sourcev1.OCIRepository{ObjectMeta: meta(ns, name),
				Spec: sourcev1.OCIRepositorySpec{URL: "oci://127.0.0.1:1/app", Insecure: true, Interval: hour}}
		},
	}, {
		kind: sourcev1.BucketKind,
		new: func(ns, name string) client.Object {
			return &sourcev1.Bucket{ObjectMeta: meta(ns, name),
				Spec: sourcev1.BucketSpec{BucketName: "app", Endpoint: "127.0.0.1:1", Insecure: true, Interval: hour}}
		},
	}} {
		t.Run(tc.kind, func(t *testing.T) {
			if tc.kind == sourcev1.BucketKind {
				bucketController(t)
			}
			statustest.CheckRules(t, k8s, env.Config, statustest.RulesKind{
				New: tc.new, Finalizer: sourcev1.SourceFinalizer, Suspend: suspendSource,
			})
		})
	}
}

// suspendSource sets spec.suspend of a source.
func suspendSource(obj client.Object) {
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		o.Spec.Suspend = true
	case *sourcev1.HelmRepository:
		o.Spec.Suspend = true
	case *sourcev1.HelmChart:
		o.Spec.Suspend = true
	case *sourcev1.OCIRepository:
		o.Spec.Suspend = true
	case *sourcev1.Bucket:
		o.Spec.Suspend = true
	}
}
