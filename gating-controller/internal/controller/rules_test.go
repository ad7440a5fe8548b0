package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/status/statustest"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// Gates, GateKeepers and GateNotifications follow the start every reconciler shares
// (shared/status.Preamble): Reconciling for a new generation and the request echoed. None has a
// finalizer; a GateNotification can be suspended.
func TestGatingKindsFollowTheSharedRules(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		new     func(ns, name string) client.Object
		suspend func(obj client.Object)
	}{{
		kind: "Gate",
		new: func(ns, name string) client.Object {
			return &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
	}, {
		kind: "GateKeeper",
		new: func(ns, name string) client.Object {
			return &gatingv1.GateKeeper{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gatingv1.GateKeeperSpec{Gate: "change-freeze", CronJob: &gatingv1.CronJob{Closed: []string{"* * 20-30 11 *"}}}}
		},
	}, {
		kind: "GateNotification",
		new: func(ns, name string) client.Object {
			return &gatingv1.GateNotification{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gatingv1.GateNotificationSpec{Type: gatingv1.NotificationGeneric, Address: "https://hooks.example.com/gates", Gates: []string{"production"},
					Events: []gatingv1.GateEventType{gatingv1.GateEventOpened}}}
		},
		suspend: func(obj client.Object) { obj.(*gatingv1.GateNotification).Spec.Suspend = true },
	}} {
		t.Run(tc.kind, func(t *testing.T) {
			statustest.CheckRules(t, k8s, env.Config, statustest.RulesKind{New: tc.new, Suspend: tc.suspend})
		})
	}
}
