package gates

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// HeldChanged passes the updates of a gated object (typed or unstructured) whose
// `status.gates.state` changed: its gates started or stopped holding it, or other gates do.
func HeldChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return heldState(e.ObjectOld) != heldState(e.ObjectNew)
		},
	}
}

func heldState(o runtime.Object) string {
	if held, ok := o.(HeldObject); ok {
		if st := held.GetGatesStatus(); st != nil {
			return st.State
		}
		return ""
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "gates", "state")
	return state
}
