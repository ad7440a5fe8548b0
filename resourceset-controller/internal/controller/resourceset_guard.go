package controller

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// guardInputs says why the ResourceSet must not apply or prune (empty when it may): the
// providers of an inputsFrom reference export fewer inputs in all than its minInputs. A provider
// that answers an empty list (an API outage, a broken filter) would otherwise prune everything
// its inputs generated, which is how whole fleets are lost.
func guardInputs(obj *rsv1.ResourceSet, counts map[string]int, perRef [][]string) string {
	var guarded []string
	for i, ref := range obj.Spec.InputsFrom {
		if ref.MinInputs == nil {
			continue
		}
		total := 0
		var parts []string
		keys := append([]string(nil), perRef[i]...)
		sort.Strings(keys)
		for _, k := range keys {
			total += counts[k]
			_, name, _ := strings.Cut(k, "/")
			parts = append(parts, fmt.Sprintf("'%s/%s' %d", obj.Namespace, name, counts[k]))
		}
		if total >= int(*ref.MinInputs) {
			continue
		}
		what := "input provider"
		if ref.Kind != rsv1.ResourceSetInputProviderKind {
			what = ref.Kind
		}
		switch {
		case ref.Name != "":
			guarded = append(guarded, fmt.Sprintf("%s '%s/%s' exports %d inputs, fewer than the minInputs %d of inputsFrom[%d]",
				what, obj.Namespace, ref.Name, total, *ref.MinInputs, i))
		case len(parts) == 0:
			guarded = append(guarded, fmt.Sprintf("the selector of inputsFrom[%d] (%s) selects no %s, fewer inputs than its minInputs %d",
				i, metav1.FormatLabelSelector(ref.Selector), what, *ref.MinInputs))
		default:
			guarded = append(guarded, fmt.Sprintf("the %ss of inputsFrom[%d] (%s) export %d inputs (%s), fewer than its minInputs %d",
				what, i, metav1.FormatLabelSelector(ref.Selector), total, strings.Join(parts, ", "), *ref.MinInputs))
		}
	}
	if len(guarded) == 0 {
		return ""
	}
	msg := strings.Join(guarded, "; ") + ": nothing is applied or pruned"
	if obj.Status.LastAppliedRevision != "" {
		msg += ", the objects of revision " + obj.Status.LastAppliedRevision + " stay"
	}
	return msg
}
