package gates

import (
	"context"
	"regexp"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// HeldObject is a gated object with conditions and a `status.gates`.
// +kubebuilder:object:generate=false
type HeldObject interface {
	gatesapi.Gated
	conditions.Setter
	GetGatesStatus() *gatesapi.GatesStatus
	SetGatesStatus(*gatesapi.GatesStatus)
}

// Holder evaluates the gates of the objects of one controller and records, as events, when they
// start and stop holding an object.
type Holder struct {
	Reader        client.Reader
	EventRecorder kuberecorder.EventRecorder
}

// Hold evaluates the gates of obj, logs them (`gates: {require, status}`, as the consumers' docs show), and
// says whether obj may go ahead. While they are closed obj carries Blocked=True, reason
// GateClosed, naming every closed gate and its next opening; an object that never applied
// anything (neverApplied) is also Ready=False with that reason. Blocked goes when they open.
//
// `status.gates` tells the same at a glance (see gatesapi.GatesStatus); an event (Held) is
// recorded when the gates start holding obj and another (Released, with how long it waited)
// when they let it go.
//
// A gate opened for one revision only (an approval of that revision) counts as opened: Hold is
// for objects that know no candidate revision; HoldRevision tells it.
func (h Holder) Hold(ctx context.Context, obj HeldObject, neverApplied bool) (bool, error) {
	return h.HoldRevision(ctx, obj, "", neverApplied)
}

// HoldRevision is Hold for an object whose next revision (what it would fetch or apply) is
// candidate; "" when nothing new waits or the object cannot tell. A gate opened for another
// revision only holds the object, naming candidate as the revision that waits for its own
// approval (in Blocked, the Held event and status.gates.waitingRevision).
func (h Holder) HoldRevision(ctx context.Context, obj HeldObject, candidate string, neverApplied bool) (bool, error) {
	res, err := h.Evaluate(ctx, obj)
	if err != nil {
		return false, err
	}
	return h.Record(ctx, obj, res.ForRevision(candidate), neverApplied), nil
}

// Evaluate reads the gates of obj, for Record; it changes nothing. Consumers that learn their
// candidate revision after reading the gates pass res.ForRevision(candidate) to Record.
func (h Holder) Evaluate(ctx context.Context, obj HeldObject) (Result, error) {
	spec, err := Spec(obj)
	if err != nil {
		// Fail closed: the gates the object was meant to wait on are unknown. Retried, as an
		// annotation changes no generation for a terminal error to wait on.
		return Result{}, err
	}
	return Evaluate(ctx, h.Reader, obj.GetNamespace(), spec)
}

// Record is the rest of Hold, for a result of Evaluate: the log, the conditions, status.gates and
// the events. It says whether obj may go ahead.
func (h Holder) Record(ctx context.Context, obj HeldObject, res Result, neverApplied bool) bool {
	spec := Of(obj)
	if spec == nil || len(spec.Refs) == 0 {
		conditions.Delete(obj, gatesapi.BlockedCondition)
		obj.SetGatesStatus(nil)
		return true
	}
	log.FromContext(ctx).Info("evaluated gates", "gates", res.LogValue())
	prev := obj.GetGatesStatus()
	if res.Open {
		conditions.Delete(obj, gatesapi.BlockedCondition)
		if prev != nil && prev.HeldSince != nil {
			waited := time.Since(prev.HeldSince.Time).Round(time.Second)
			h.EventRecorder.Eventf(obj, "Normal", gatesapi.ReleasedReason,
				"released by its gates after waiting %s", waited)
		}
		obj.SetGatesStatus(&gatesapi.GatesStatus{State: gatesapi.GatesOpenState})
		return true
	}
	next := &gatesapi.GatesStatus{State: res.State()}
	if prev != nil && prev.HeldSince != nil {
		next.HeldSince, next.WaitingRevision = prev.HeldSince, prev.WaitingRevision
	} else {
		now := metav1.Now()
		next.HeldSince = &now
		h.EventRecorder.Event(obj, "Normal", gatesapi.HeldReason, res.Message())
	}
	if w := res.waitingRevision(); w != "" {
		next.WaitingRevision = w
	}
	obj.SetGatesStatus(next)
	conditions.MarkTrue(obj, gatesapi.BlockedCondition, gatesapi.GateClosedReason, "%s", res.Message())
	if neverApplied {
		conditions.MarkFalse(obj, meta.ReadyCondition, gatesapi.GateClosedReason, "%s", res.Message())
	}
	return false
}

// waitingRevision is the candidate that a gate opened for another revision holds, if any.
func (r Result) waitingRevision() string {
	for _, g := range r.Closed() {
		if g.WaitingRevision != "" {
			return g.WaitingRevision
		}
	}
	return ""
}

// Waiting records on a held object the revision its gates keep back; "" says that nothing new
// waits. It does nothing on an object its gates do not hold.
func Waiting(obj HeldObject, revision string) {
	if st := obj.GetGatesStatus(); st != nil && st.HeldSince != nil {
		st.WaitingRevision = revision
	}
}

// HeldNote completes the Ready message of an object its gates hold, e.g. "; revision
// 'main@sha1:…' waits for the gates: closed (change-freeze)". It is empty while the gates are
// open.
func HeldNote(obj HeldObject) string {
	st := obj.GetGatesStatus()
	if st == nil || st.HeldSince == nil {
		return ""
	}
	if st.WaitingRevision != "" {
		return "; revision '" + st.WaitingRevision + "' waits for the gates: " + st.State
	}
	return "; held by its gates: " + st.State
}

// MarkHeldReady makes obj's Ready message end with HeldNote: the note of an earlier reconcile
// goes, the current one (if any) is appended.
func MarkHeldReady(obj HeldObject) {
	ready := conditions.Get(obj, meta.ReadyCondition)
	if ready == nil {
		return
	}
	msg := heldNoteRE.ReplaceAllString(ready.Message, "") + HeldNote(obj)
	if msg == ready.Message {
		return
	}
	ready = ready.DeepCopy()
	ready.Message = msg
	conditions.Set(obj, ready)
}

// heldNoteRE matches what HeldNote appends, at the end of a message.
var heldNoteRE = regexp.MustCompile(`; (revision '[^']*' waits for the gates|held by its gates): [^;]*$`)
