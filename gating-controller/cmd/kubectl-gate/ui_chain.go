package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// uiPromotion is a gate's chain besides requests and approvals, as `kubectl gate status NAME`
// prints it: the revision it is opened for, what spec.promotion promoted and soaks, and the
// failing check.
type uiPromotion struct {
	OpenedForRevision string `json:"openedForRevision,omitempty"`
	Promoted          string `json:"promoted,omitempty"`
	PromotedAt        string `json:"promotedAt,omitempty"`
	Candidate         string `json:"candidate,omitempty"`
	SoakingSince      string `json:"soakingSince,omitempty"`
	OpensAt           string `json:"opensAt,omitempty"`
	Message           string `json:"message,omitempty"`
	// From names the objects revisions are promoted from: "Kind namespace/name".
	From []string `json:"from,omitempty"`
	// Checks is "n passing" or the failing check; empty without spec.checks.
	Checks     string `json:"checks,omitempty"`
	ChecksFail bool   `json:"checksFail,omitempty"`
	// Promotion: the gate has spec.promotion.
	Promotion bool `json:"promotion"`
}

// promotionOf is nil for a gate with no promotion, no checks and no revision it is opened for.
func promotionOf(gate *gatingv1alpha1.Gate) *uiPromotion {
	if gate.Spec.Promotion == nil && len(gate.Spec.Checks) == 0 && gate.Status.OpenedForRevision == "" {
		return nil
	}
	p := &uiPromotion{OpenedForRevision: gate.Status.OpenedForRevision}
	if spec := gate.Spec.Promotion; spec != nil {
		p.Promotion = true
		for _, ref := range spec.From {
			ns := ref.Namespace
			if ns == "" {
				ns = gate.Namespace
			}
			p.From = append(p.From, ref.Kind+" "+ns+"/"+ref.Name)
		}
		if st := gate.Status.Promotion; st != nil {
			p.Promoted, p.Candidate, p.Message = st.Revision, st.Candidate, collapse(st.Message)
			if st.PromotedAt != nil {
				p.PromotedAt = formatTime(st.PromotedAt.Time)
			}
			if st.SoakingSince != nil {
				p.SoakingSince = formatTime(st.SoakingSince.Time)
			}
			if st.OpensAt != nil {
				p.OpensAt = formatTime(st.OpensAt.Time)
			}
		}
	}
	if n := len(gate.Spec.Checks); n > 0 {
		p.Checks = fmt.Sprintf("%d passing", n)
		if gate.Status.Checks != "" {
			p.Checks, p.ChecksFail = collapse(gate.Status.Checks), true
		}
	}
	return p
}

// uiDeletion is a set of objects whose deletion waits on a gate (status.pendingDeletion of a
// ResourceSet or a ManifestGeneration).
type uiDeletion struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Digest    string   `json:"digest"`
	Count     int64    `json:"count"`
	Objects   []string `json:"objects"`
	State     string   `json:"state"`
	Message   string   `json:"message"`
}

// deletionOf is the deletion set an object holds for a gate's approvers, and the gate.
func deletionOf(kind string, obj *unstructured.Unstructured) (types.NamespacedName, uiDeletion, bool) {
	set, ok, _ := unstructured.NestedMap(obj.Object, "status", "pendingDeletion")
	if !ok {
		return types.NamespacedName{}, uiDeletion{}, false
	}
	str := func(k string) string { s, _, _ := unstructured.NestedString(set, k); return s }
	count, _, _ := unstructured.NestedInt64(set, "count")
	objects, _, _ := unstructured.NestedStringSlice(set, "objects")
	if objects == nil {
		objects = []string{}
	}
	d := uiDeletion{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Digest: str("digest"), Count: count,
		Objects: objects, State: str("state"), Message: collapse(str("message"))}
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: str("gate")}, d, true
}
