package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/status/statustest"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// ResourceSets and ResourceSetInputProviders follow the start every reconciler shares
// (shared/status.Preamble): Reconciling for a new generation, the request echoed, also while
// disabled by fluxcd.controlplane.io/reconcile, and a ResourceSet's finalizer added, also to
// one created disabled.
func TestResourceSetKindsFollowTheSharedRules(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		finalizer string
		new       func(ns, name string) client.Object
	}{{
		kind: rsv1.ResourceSetKind, finalizer: rsv1.Finalizer,
		new: func(ns, name string) client.Object {
			return &rsv1.ResourceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
	}, {
		kind: rsv1.ResourceSetInputProviderKind,
		new: func(ns, name string) client.Object {
			return &rsv1.ResourceSetInputProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: rsv1.ResourceSetInputProviderSpec{Type: rsv1.InputProviderStatic}}
		},
	}} {
		t.Run(tc.kind, func(t *testing.T) {
			statustest.CheckRules(t, k8s, env.Config, statustest.RulesKind{
				New: tc.new, Finalizer: tc.finalizer,
				Suspend: func(obj client.Object) {
					ann := obj.GetAnnotations()
					if ann == nil {
						ann = map[string]string{}
					}
					ann[rsv1.ReconcileAnnotation] = rsv1.DisabledValue
					obj.SetAnnotations(ann)
				},
			})
		})
	}
}
