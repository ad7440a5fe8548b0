package builder

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

const (
	// reconcileAnnotation set to disabledValue on a rendered object excludes it,
	// which lets templates drop an object for some inputs.
	reconcileAnnotation = "fluxcd.controlplane.io/reconcile"
	disabledValue       = "disabled"
)

// CommonMetadata is spec.commonMetadata: labels and annotations set on every
// generated object, overriding the keys the templates set.
type CommonMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// isDisabled reports whether a rendered object opted out of reconciliation.
// It is checked before common metadata is applied: the exclusion is a
// per-object decision of the template.
func isDisabled(u *unstructured.Unstructured) bool {
	// Read in place: toObject has checked the types, and GetAnnotations copies.
	meta := u.Object["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	return annotations[reconcileAnnotation] == disabledValue
}

// applyCommonMetadata sets the common labels and annotations on obj.
// toObject has already checked that metadata and its maps have the right types.
func applyCommonMetadata(u *unstructured.Unstructured, common *CommonMetadata) {
	if common == nil {
		return
	}
	meta := u.Object["metadata"].(map[string]any)
	setAll(meta, "labels", common.Labels)
	setAll(meta, "annotations", common.Annotations)
}

func setAll(meta map[string]any, key string, values map[string]string) {
	if len(values) == 0 {
		return
	}
	m, _ := meta[key].(map[string]any)
	if m == nil {
		m = make(map[string]any, len(values))
		meta[key] = m
	}
	for k, v := range values {
		m[k] = v
	}
}
