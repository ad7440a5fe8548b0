package gatesapi

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An object bound to gates by GatesAnnotation (Flux's Kustomization, HelmRelease and
// ImageUpdateAutomation) has no `status.gates` of ours: the gating-controller records how the
// gates hold it in annotations on the object instead, present only while they hold it. Like
// `status.gates`, they live on the object, so a restarted controller finds what it did.
const (
	// HeldSinceAnnotation is when the gates started holding the object (RFC 3339).
	HeldSinceAnnotation = "gating.toolkit.fluxcd.io/held-since"

	// HeldByAnnotation names the gates that hold the object, as the object refers to them
	// ("sre-approval, flux-system/qa-approval"), or InvalidGatesHolder.
	HeldByAnnotation = "gating.toolkit.fluxcd.io/held-by"

	// WaitingRevisionAnnotation is the revision that waits behind the gates, when the
	// gating-controller can tell (a Kustomization's source has an artifact it has not applied).
	WaitingRevisionAnnotation = "gating.toolkit.fluxcd.io/waiting-revision"

	// SuspendedAnnotation ("true") says that `spec.suspend` was set for the gates, by the
	// gating-controller or by the admission policy that suspends gated objects as they are
	// created or annotated; the gating-controller removes that suspend, and this annotation,
	// when the gates release the object. A suspend without it is the user's, never touched.
	SuspendedAnnotation = "gating.toolkit.fluxcd.io/suspended"

	// InvalidGatesHolder is the HeldByAnnotation of an object whose GatesAnnotation does not
	// parse: it is held, since the gates it was meant to wait on are unknown.
	InvalidGatesHolder = "invalid " + GatesAnnotation + " annotation"
)

const (
	// ApprovedCondition is the gating RFC's condition on an object bound by GatesAnnotation:
	// False, reason GateClosedReason, while its gates hold it; True, reason GateOpenedReason,
	// once they let it go.
	ApprovedCondition = "Approved"

	// GateOpenedReason is the reason of Approved=True.
	GateOpenedReason = "GateOpened"
)

// HeldStatus reads the annotations of an object bound by GatesAnnotation as the GatesStatus
// that Sluice's own kinds report: nil without GatesAnnotation, State "open" while nothing holds
// it, "closed (<held-by>)" while its gates hold it.
func HeldStatus(annotations map[string]string) *GatesStatus {
	if _, bound := annotations[GatesAnnotation]; !bound {
		return nil
	}
	since, held := annotations[HeldSinceAnnotation]
	if !held {
		return &GatesStatus{State: GatesOpenState}
	}
	st := &GatesStatus{State: "closed (" + annotations[HeldByAnnotation] + ")", WaitingRevision: annotations[WaitingRevisionAnnotation]}
	if t, err := time.Parse(time.RFC3339, since); err == nil {
		mt := metav1.NewTime(t)
		st.HeldSince = &mt
	}
	return st
}
