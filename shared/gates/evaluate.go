package gates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// GateState is what the evaluation found for one referenced gate.
// +kubebuilder:object:generate=false
type GateState struct {
	// Ref is the reference as written in the spec.
	Ref string
	// Gate is the Gate the reference resolves to.
	Gate types.NamespacedName
	// Opened is true only for an existing gate whose Opened condition is True and, when the gate
	// is opened for one revision only (ApprovedRevision), for a candidate revision that is that
	// one or unknown.
	Opened bool
	// ApprovedRevision is the revision an approval opened the gate for (the Gate's
	// status.openedForRevision): the gate is opened for that revision only.
	ApprovedRevision string
	// WaitingRevision is the candidate revision that the gate holds because it is opened for
	// another revision only; "" when the gate does not hold it for that.
	WaitingRevision string
	// Found is false when no Gate of that name exists.
	Found bool
	// Evaluated is false when the Gate has no Opened condition yet.
	Evaluated bool
	// NextOpening is when a closed gate opens by itself, when its status says so.
	NextOpening *time.Time

	// open: the gate's Opened condition is True, whatever the revision.
	open bool
}

// Result is the outcome of evaluating a gatesapi.Gates spec.
// +kubebuilder:object:generate=false
type Result struct {
	Require gatesapi.Requirement
	Gates   []GateState
	// Open is true when the object may go ahead.
	Open bool
	// Candidate is the revision the object would fetch or apply, when it told (ForRevision).
	Candidate string
}

// Evaluate reads the Gate objects that gates refers to (bare names in namespace) and says whether
// the object that carries it may go ahead. An empty spec is open. A missing gate, or a gate the
// gating-controller has not evaluated yet, counts as closed. Only API errors other than
// not-found are returned.
//
// A gate opened for one revision only (an approval of that revision) counts as opened here, as
// for an object that knows no candidate revision; EvaluateRevision tells the candidate.
func Evaluate(ctx context.Context, reader client.Reader, namespace string, gates *gatesapi.Gates) (Result, error) {
	return EvaluateRevision(ctx, reader, namespace, gates, "")
}

// EvaluateRevision is Evaluate for an object whose next revision is candidate: a gate opened for
// one revision only counts as opened only when candidate is that revision, or "" (the object
// knows no candidate: nothing new waits, or its kind cannot tell).
func EvaluateRevision(ctx context.Context, reader client.Reader, namespace string, gates *gatesapi.Gates, candidate string) (Result, error) {
	res := Result{Require: gates.Requirement(), Open: true}
	if gates == nil || len(gates.Refs) == 0 {
		return res, nil
	}
	for _, ref := range gates.Refs {
		st, err := readGate(ctx, reader, namespace, ref)
		if err != nil {
			return Result{}, err
		}
		res.Gates = append(res.Gates, st)
	}
	return res.ForRevision(candidate), nil
}

// ForRevision is the result for an object whose next revision is candidate ("" when it knows
// none), from the same reading of the gates: a gate opened for another revision only holds it.
func (r Result) ForRevision(candidate string) Result {
	out := Result{Require: r.Require, Candidate: candidate, Gates: make([]GateState, len(r.Gates))}
	opened := 0
	for i, g := range r.Gates {
		g.WaitingRevision = ""
		g.Opened = g.open
		if g.open && g.ApprovedRevision != "" && candidate != "" && candidate != g.ApprovedRevision {
			g.Opened, g.WaitingRevision = false, candidate
		}
		if g.Opened {
			opened++
		}
		out.Gates[i] = g
	}
	switch {
	case len(out.Gates) == 0:
		out.Open = true
	case out.Require == gatesapi.RequireOneOf:
		out.Open = opened > 0
	default:
		out.Open = opened == len(out.Gates)
	}
	return out
}

// RevisionScoped says whether the outcome may depend on the candidate revision: an opened gate
// of the spec is opened for one revision only.
func (r Result) RevisionScoped() bool {
	for _, g := range r.Gates {
		if g.open && g.ApprovedRevision != "" {
			return true
		}
	}
	return false
}

func readGate(ctx context.Context, reader client.Reader, namespace, ref string) (GateState, error) {
	st := GateState{Ref: ref, Gate: gatesapi.ResolveRef(namespace, ref)}
	gate := &unstructured.Unstructured{}
	gate.SetGroupVersionKind(gatesapi.GateGVK)
	if err := reader.Get(ctx, st.Gate, gate); err != nil {
		if apierrors.IsNotFound(err) {
			return st, nil
		}
		return st, fmt.Errorf("reading gate '%s': %w", st.Gate, err)
	}
	st.Found = true
	cond := conditions.Get(conditions.UnstructuredGetter(gate), gatesapi.OpenedCondition)
	if cond == nil || cond.Status == metav1.ConditionUnknown {
		return st, nil
	}
	st.Evaluated = true
	st.Opened = cond.Status == metav1.ConditionTrue
	st.open = st.Opened
	if st.Opened {
		st.ApprovedRevision, _, _ = unstructured.NestedString(gate.Object, "status", gatesapi.OpenedForRevisionField)
	}
	if !st.Opened {
		if s, ok, _ := unstructured.NestedString(gate.Object, "status", gatesapi.NextTransitionField); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				st.NextOpening = &t
			}
		}
	}
	return st, nil
}

// Closed returns the gates that keep the object from going ahead.
func (r Result) Closed() []GateState {
	var closed []GateState
	for _, g := range r.Gates {
		if !g.Opened {
			closed = append(closed, g)
		}
	}
	return closed
}

// State is the `status.gates.state` of the result: "open", or "closed (<ref>, ...)" naming the
// gates that hold the object as its spec refers to them.
func (r Result) State() string {
	if r.Open {
		return gatesapi.GatesOpenState
	}
	var refs []string
	for _, g := range r.Closed() {
		refs = append(refs, g.Ref)
	}
	return "closed (" + strings.Join(refs, ", ") + ")"
}

// Message says why the object is blocked, naming every closed gate and when it opens if known,
// e.g. "Reconciliation is blocked as gate 'flux-system/change-freeze' is closed until
// 2026-12-01T00:00:00Z.". It is empty when the gates are open.
func (r Result) Message() string {
	return r.message("Reconciliation is blocked as ", "Reconciliation is blocked as none of its gates is opened: ")
}

// ApprovalMessage is the gating RFC's message of the Approved condition, for objects whose API
// has no Blocked condition of ours, e.g. "Reconciliation is waiting approval, gate
// 'flux-system/sre-approval' is closed.". It is empty when the gates are open.
func (r Result) ApprovalMessage() string {
	return r.message("Reconciliation is waiting approval, ", "Reconciliation is waiting approval, none of its gates is opened: ")
}

func (r Result) message(prefix, oneOfPrefix string) string {
	if r.Open {
		return ""
	}
	var parts []string
	for _, g := range r.Closed() {
		parts = append(parts, g.describe())
	}
	if r.Require == gatesapi.RequireOneOf && len(r.Gates) > 1 {
		prefix = oneOfPrefix
	}
	return prefix + joinAnd(parts) + "."
}

func (g GateState) describe() string {
	switch {
	case !g.Found:
		return fmt.Sprintf("gate '%s' does not exist", g.Gate)
	case !g.Evaluated:
		return fmt.Sprintf("gate '%s' has not been evaluated by the gating-controller yet", g.Gate)
	case g.WaitingRevision != "":
		return fmt.Sprintf("revision '%s' waits for its own approval (gate '%s' is approved for revision '%s')",
			g.WaitingRevision, g.Gate, g.ApprovedRevision)
	case g.NextOpening != nil:
		return fmt.Sprintf("gate '%s' is closed until %s", g.Gate, g.NextOpening.UTC().Format(time.RFC3339))
	default:
		return fmt.Sprintf("gate '%s' is closed", g.Gate)
	}
}

func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// NextOpening is the earliest time at which the object would be released by itself, when the
// statuses of its closed gates tell: the latest opening for `all`, the earliest for `oneOf`.
func (r Result) NextOpening() *time.Time {
	if r.Open {
		return nil
	}
	var next *time.Time
	for _, g := range r.Closed() {
		switch {
		case g.NextOpening == nil && r.Require != gatesapi.RequireOneOf:
			return nil // an `all` spec waits on a gate with no known opening
		case g.NextOpening == nil:
			continue
		case next == nil,
			r.Require == gatesapi.RequireOneOf && g.NextOpening.Before(*next),
			r.Require != gatesapi.RequireOneOf && g.NextOpening.After(*next):
			next = g.NextOpening
		}
	}
	return next
}

// LogValue is the structured form logged under the key "gates" by every gated reconcile:
// {"require": "oneOf", "status": [{"gate": "change-freeze", "closed": "true"}, ...]}.
func (r Result) LogValue() map[string]any {
	status := make([]map[string]string, 0, len(r.Gates))
	for _, g := range r.Gates {
		status = append(status, map[string]string{"gate": g.Ref, "closed": fmt.Sprint(!g.Opened)})
	}
	return map[string]any{"require": string(r.Require), "status": status}
}
