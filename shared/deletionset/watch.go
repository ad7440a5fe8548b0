package deletionset

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ApprovalChanged lets through the changes of a Gate's approval (its state, the revision pending,
// the revision approved), which decide the deletion sets waiting on it, and its creation.
func ApprovalChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool { return approvalOf(e.ObjectOld) != approvalOf(e.ObjectNew) },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

func approvalOf(obj client.Object) [3]string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return [3]string{}
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "approval", "state")
	pending, _, _ := unstructured.NestedString(u.Object, "status", "approval", "pending", "revision")
	approved, _, _ := unstructured.NestedString(u.Object, "status", "approval", "approvedRevision")
	return [3]string{state, pending, approved}
}
