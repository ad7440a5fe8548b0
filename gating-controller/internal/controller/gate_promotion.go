package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/dependency"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
	"github.com/sluice-gitops/sluice/gating-controller/internal/promotion"
)

const (
	// PromotedReason is the event of a revision promoted by spec.promotion.
	PromotedReason = "Promoted"
	// PromotionRequester is who a promotion's open request is made by.
	PromotionRequester = "promotion"
	// promotionInterval is how often a gate with spec.promotion or spec.checks reads their objects
	// (spec.interval when shorter): no watch tells it that they changed.
	promotionInterval = 30 * time.Second
)

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get

// objectReader reads the objects of spec.promotion and spec.checks: as spec.serviceAccountName
// when set, else with the controller's own permissions, in the gate's namespace only.
func (r *GateReconciler) objectReader(gate *gatingv1.Gate) (client.Reader, error) {
	if gate.Spec.ServiceAccountName == "" || r.Clients == nil {
		return readerOr(r.apiReader, r.Client), nil
	}
	c, err := r.Clients.For(gate.Namespace, gate.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	return c.Client, nil
}

// unreadable says why a reference is not read with the controller's own permissions; empty
// when it may be: without spec.serviceAccountName, only objects of the gate's namespace, and no
// Secret (whoever may write a Gate would otherwise learn of a Secret they may not read).
func unreadable(gate *gatingv1.Gate, ref gatingv1.GateObjectReference) string {
	if gate.Spec.ServiceAccountName != "" {
		return ""
	}
	if ref.Kind == "Secret" && ref.APIVersion == "v1" {
		return fmt.Sprintf("Secret %s/%s is read only as spec.serviceAccountName, whose permissions decide what the gate may read",
			namespaceOr(ref.Namespace, gate.Namespace), ref.Name)
	}
	if ref.Namespace == "" || ref.Namespace == gate.Namespace {
		return ""
	}
	return fmt.Sprintf("%s %s/%s is in another namespace than the gate: set spec.serviceAccountName, whose permissions decide what the gate may read",
		ref.Kind, ref.Namespace, ref.Name)
}

// reconcilePromotion evaluates spec.promotion into status.promotion and returns the open request
// of a revision that has soaked (for the gate's approval when it has one), and when to look again.
func (r *GateReconciler) reconcilePromotion(ctx context.Context, gate *gatingv1.Gate, now time.Time) (*gatestate.Request, time.Duration) {
	spec := gate.Spec.Promotion
	if spec == nil {
		gate.Status.Promotion = nil
		return nil, 0
	}
	st := gate.Status.Promotion
	if st == nil {
		st = &gatingv1.GatePromotionStatus{}
		gate.Status.Promotion = st
	}
	observed := make([]promotion.Observed, 0, len(spec.From))
	reader, err := r.objectReader(gate)
	for _, ref := range spec.From {
		o := promotion.Observed{Name: fmt.Sprintf("%s %s/%s", ref.Kind, namespaceOr(ref.Namespace, gate.Namespace), ref.Name)}
		switch why := unreadable(gate, ref); {
		case why != "":
			o.NotReady = why
		case err != nil:
			o.NotReady = err.Error()
		default:
			o = r.observe(ctx, reader, gate, ref, o)
		}
		observed = append(observed, o)
	}
	soak := time.Duration(0)
	if spec.Soak != nil {
		soak = spec.Soak.Duration
	}
	res := promotion.Evaluate(observed, soak, st.Revision, now)
	st.Candidate, st.Message, st.SoakingSince, st.OpensAt = res.Candidate, res.Message, timeOrNil(res.SoakingSince), timeOrNil(res.OpensAt)
	requeue := promotionInterval
	if res.OpensAt != nil && res.OpensAt.After(now) && res.OpensAt.Sub(now) < requeue {
		requeue = res.OpensAt.Sub(now) + 100*time.Millisecond
	}
	if !res.Soaked {
		return nil, requeue
	}
	promoted := metav1.NewTime(now)
	st.Revision, st.PromotedAt, st.Candidate, st.SoakingSince, st.OpensAt = res.Candidate, &promoted, "", nil, nil
	r.EventRecorder.Event(gate, corev1.EventTypeNormal, PromotedReason, "revision '"+res.Candidate+"' promoted: "+res.Message)
	log.FromContext(ctx).Info("revision promoted", "revision", res.Candidate)
	return &gatestate.Request{State: gatingv1.GateOpened, At: now, RequestedBy: PromotionRequester, Reason: res.Message,
		Revision: res.Candidate, Promotion: true}, requeue
}

// observe reads one object of spec.promotion.from.
func (r *GateReconciler) observe(ctx context.Context, reader client.Reader, gate *gatingv1.Gate, ref gatingv1.GateObjectReference, o promotion.Observed) promotion.Observed {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	err := reader.Get(ctx, client.ObjectKey{Namespace: namespaceOr(ref.Namespace, gate.Namespace), Name: ref.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		o.NotReady = "it does not exist"
	case err != nil:
		o.NotReady = "it cannot be read: " + err.Error()
	default:
		o = promotion.Observe(obj)
	}
	return o
}

// reconcileChecks evaluates spec.checks into status.checks: why the first failing one holds the
// gate closed. An error that says nothing of the objects (the API server unreachable) keeps the
// last verdict.
func (r *GateReconciler) reconcileChecks(ctx context.Context, gate *gatingv1.Gate) time.Duration {
	if len(gate.Spec.Checks) == 0 {
		gate.Status.Checks = ""
		return 0
	}
	refs := make([]dependency.Ref, 0, len(gate.Spec.Checks))
	for _, c := range gate.Spec.Checks {
		if why := unreadable(gate, c.GateObjectReference); why != "" {
			gate.Status.Checks = "check of " + why
			return promotionInterval
		}
		refs = append(refs, dependency.Ref{APIVersion: c.APIVersion, Kind: c.Kind, Name: c.Name,
			Namespace: namespaceOr(c.Namespace, gate.Namespace), Ready: c.Ready, ReadyExpr: c.ReadyExpr})
	}
	reader, err := r.objectReader(gate)
	if err == nil {
		checker := &dependency.Checker{Reader: reader, Cache: r.checks(), Noun: "check", Owner: "gate"}
		err = checker.Check(ctx, gate.Namespace, refs)
	}
	switch {
	case err == nil:
		gate.Status.Checks = ""
	case dependency.IsNotReady(err) || dependency.IsTerminal(err):
		gate.Status.Checks = err.Error()
	case errors.Is(err, context.Canceled):
	default:
		log.FromContext(ctx).Info("the checks could not be evaluated; the last verdict stays", "error", err.Error())
	}
	return promotionInterval
}

// checks is the compiled expressions of the checks, shared by the gates.
func (r *GateReconciler) checks() *dependency.Cache {
	r.checkCacheOnce.Do(func() { r.checkCache = dependency.NewCache() })
	return r.checkCache
}

func namespaceOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}

func timeOrNil(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(*t)
	return &m
}
