package fluxreceiver

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/status/statustest"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// Receivers follow the start every reconciler shares (shared/status.Preamble): Reconciling for a
// new generation, the request echoed, and spec.suspend. A Receiver has no finalizer.
func TestReceiverFollowsTheSharedRules(t *testing.T) {
	statustest.CheckRules(t, k8s, env.Config, statustest.RulesKind{
		New: func(ns, name string) client.Object {
			return &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: notificationv1.ReceiverSpec{Type: "generic", SecretRef: &meta.LocalObjectReference{Name: "token"},
					Resources: []notificationv1.ReceiverResource{resource("GitRepository", "app")}}}
		},
		Suspend: func(obj client.Object) { obj.(*notificationv1.Receiver).Spec.Suspend = true },
	})
}
