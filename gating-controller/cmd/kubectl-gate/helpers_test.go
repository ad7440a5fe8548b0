package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

func createGate(t *testing.T, namespace, name string, spec gatingv1alpha1.GateSpec) *gatingv1alpha1.Gate {
	t.Helper()
	gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	NewWithT(t).Expect(env.Client.Create(context.Background(), gate)).To(Succeed())
	return gate
}

func getGate(t *testing.T, namespace, name string) *gatingv1alpha1.Gate {
	t.Helper()
	gate := &gatingv1alpha1.Gate{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, gate)).To(Succeed())
	return gate
}

// setStatus writes the status subresource as the gating-controller would.
func setStatus(t *testing.T, gate *gatingv1alpha1.Gate, status gatingv1alpha1.GateStatus) {
	t.Helper()
	current := getGate(t, gate.Namespace, gate.Name)
	current.Status = status
	NewWithT(t).Expect(env.Client.Status().Update(context.Background(), current)).To(Succeed())
}

// openedCondition is the Opened condition as the controller sets it.
func openedCondition(opened bool, message string) metav1.Condition {
	c := metav1.Condition{Type: "Opened", Status: metav1.ConditionFalse, Reason: "Closed", Message: message,
		LastTransitionTime: metav1.Now()}
	if opened {
		c.Status, c.Reason = metav1.ConditionTrue, "Opened"
	}
	return c
}

func at(s string) *metav1.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &metav1.Time{Time: t}
}
