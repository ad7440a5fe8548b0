package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// uiApproval is the approval part of a gate with spec.approval, as the page shows it.
type uiApproval struct {
	State    string `json:"state"`
	Message  string `json:"message"`
	Request  string `json:"request"`
	Revision string `json:"revision,omitempty"`
	// Authors of the revision, whom preventSelfApproval refuses (status.approval.pending.authors).
	Authors  string   `json:"authors,omitempty"`
	Required int      `json:"required"`
	Rules    []uiRule `json:"rules"`
	// Responses are the newest responses first: "time user decision counted reason".
	Responses [][]string `json:"responses"`
	// CanRespond: the viewer may create GateApprovals in the gate's namespace (a
	// SelfSubjectAccessReview); without it the page shows the approval read-only, and says why.
	CanRespond bool   `json:"canRespond"`
	ReadOnly   string `json:"readOnly,omitempty"`
}

type uiRule struct {
	Name       string `json:"name"`
	Approvers  string `json:"approvers"`
	Progress   string `json:"progress"`
	ApprovedBy string `json:"approvedBy"`
}

// approvalOf is the approval of the gate for the page; nil when the gate has no spec.approval.
func approvalOf(gate *gatingv1alpha1.Gate, canRespond func(namespace string) (bool, string)) *uiApproval {
	spec, st := gate.Spec.Approval, gate.Status.Approval
	if spec == nil {
		return nil
	}
	a := &uiApproval{State: "-", Message: "-", Request: "no open request yet", Required: spec.RequiredApprovals(),
		Rules: []uiRule{}, Responses: [][]string{}}
	a.CanRespond, a.ReadOnly = canRespond(gate.Namespace)
	progress := map[string][]string{}
	if st != nil {
		for _, r := range st.Rules {
			progress[r.Name] = r.ApprovedBy
		}
	}
	for _, r := range spec.Rules {
		approvers := append([]string{}, r.Approvers.Users...)
		for _, g := range r.Approvers.Groups {
			approvers = append(approvers, "group "+g)
		}
		a.Rules = append(a.Rules, uiRule{Name: r.Name, Approvers: strings.Join(approvers, ", "),
			Progress:   fmt.Sprintf("%d/%d", len(progress[r.Name]), r.Minimum),
			ApprovedBy: orDash(strings.Join(progress[r.Name], ", "))})
	}
	if st == nil || st.Pending == nil {
		return a
	}
	a.State = string(st.State)
	p := st.Pending
	a.Request = "open requested at " + formatTime(p.RequestedAt.Time)
	if p.RequestedBy != "" {
		a.Request += " by " + p.RequestedBy
	}
	if reason := collapse(p.Reason); reason != "" {
		a.Request += fmt.Sprintf(": %q", reason)
	}
	a.Revision = p.Revision
	a.Authors = strings.Join(p.Authors, ", ")
	for _, c := range gate.Status.Conditions {
		if c.Type == "Approved" {
			a.Message = c.Message
		}
	}
	for _, r := range st.Responses {
		counted := "counted"
		if !r.Counted {
			counted = "not counted: " + r.Refused
		}
		a.Responses = append(a.Responses, []string{formatTime(r.Time.Time), r.User, string(r.Decision), counted, orDash(collapse(r.Reason))})
	}
	return a
}

// mayRespond asks the API server whether the viewer may create GateApprovals in namespace, once
// per namespace and poll.
func (d *dashboard) mayRespond(ctx context.Context) func(namespace string) (bool, string) {
	seen := map[string][2]any{}
	return func(namespace string) (bool, string) {
		if v, ok := seen[namespace]; ok {
			return v[0].(bool), v[1].(string)
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create",
				Group: gatingv1alpha1.GroupVersion.Group, Resource: "gateapprovals"}}}
		ok, why := false, ""
		if err := d.accessReview(ctx, review); err != nil {
			why = "read-only: cannot check your rights (" + err.Error() + ")"
		} else if ok = review.Status.Allowed; !ok {
			why = "read-only: your RBAC does not let you create gateapprovals in " + namespace
		}
		seen[namespace] = [2]any{ok, why}
		return ok, why
	}
}

// accessReview asks the API server with the user's own config.
func (d *dashboard) accessReview(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview) error {
	if d.config == nil {
		return fmt.Errorf("no REST config")
	}
	cs, err := kubernetes.NewForConfig(d.config)
	if err != nil {
		return err
	}
	got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	review.Status = got.Status
	return nil
}

// respondRequest is the body of POST /api/gates/{namespace}/{name}/{decision}.
type respondRequest struct {
	Reason string `json:"reason"`
	// Revision is the revision of the request the page showed: the response is for it, so that
	// a request replaced since the page was drawn is not approved unseen.
	Revision string `json:"revision"`
}

// handleRespond creates a GateApproval as the user running the page (fromThePage only).
func (d *dashboard) handleRespond(w http.ResponseWriter, r *http.Request) {
	if !fromThePage(w, r) {
		return
	}
	decision := gatingv1alpha1.GateDecision(r.PathValue("decision"))
	if decision != gatingv1alpha1.DecisionApprove && decision != gatingv1alpha1.DecisionReject {
		http.NotFound(w, r)
		return
	}
	var body respondRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8192)).Decode(&body); err != nil {
		http.Error(w, "invalid request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if d.namespace != "" && ns != d.namespace {
		http.Error(w, "the page shows namespace "+d.namespace+" only", http.StatusForbidden)
		return
	}
	gate := &gatingv1alpha1.Gate{}
	if err := d.client.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name}, gate); err != nil {
		writeAPIError(w, err)
		return
	}
	if gate.Spec.Approval == nil {
		http.Error(w, "the gate has no spec.approval", http.StatusConflict)
		return
	}
	ga, err := respond(r.Context(), d.client, d.config, gate, decision, strings.TrimSpace(body.Reason), body.Revision)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": ga.Name, "user": ga.Spec.User})
}

// writeAPIError answers with the API server's own message and status.
func writeAPIError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Code != 0 {
		code = int(s.Status().Code)
	}
	http.Error(w, err.Error(), code)
}
