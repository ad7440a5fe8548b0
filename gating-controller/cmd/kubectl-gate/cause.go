package main

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// keeperFailedCondition is the Gate condition the gating-controller sets while a GateKeeper of
// the gate cannot be evaluated.
const keeperFailedCondition = "KeeperFailed"

// stateCause is the one line that says why the gate is in its state: the gating-controller
// writes it as the message of the Ready condition (a request and when it ends, a GateKeeper's
// schedule, the default, or a broken GateKeeper).
func stateCause(gate *gatingv1alpha1.Gate) string {
	if c := apimeta.FindStatusCondition(gate.Status.Conditions, "Ready"); c != nil && c.Message != "" {
		return oneLine(c.Message)
	}
	return "-"
}

// keeperFailed is the message of a true KeeperFailed condition, empty otherwise.
func keeperFailed(gate *gatingv1alpha1.Gate) string {
	if c := apimeta.FindStatusCondition(gate.Status.Conditions, keeperFailedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return oneLine(c.Message)
	}
	return ""
}

// requestEnd is when the last request ends. A request with no end is the surprising case (a
// manual close that never expires), so it is spelled out rather than shown as "-".
func requestEnd(gate *gatingv1alpha1.Gate) string {
	st := gate.Status
	if st.ResetToDefaultAt == nil && st.Request != nil && st.RequestedAt != nil {
		return "never: the request lasts until the next request (no --for and no spec.window)"
	}
	return timeOrDash(st.ResetToDefaultAt)
}
