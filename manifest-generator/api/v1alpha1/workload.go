package v1alpha1

import (
	"fmt"
	"regexp"
)

// workloadPattern is the format of spec.workload, the same as the CEL rule of the CRD.
var workloadPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?):([A-Za-z][A-Za-z0-9]*)/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$`)

// Workload is a workload of a ManifestUpdate, `<namespace>:<kind>/<name>`; its parts are the
// FLUX_WL_NS, FLUX_WL_KIND and FLUX_WL_NAME of the updaters.
type Workload struct {
	Namespace string
	Kind      string
	Name      string
}

// ParseWorkload parses `<namespace>:<kind>/<name>`, e.g. `default:deployment/foo`.
func ParseWorkload(s string) (Workload, error) {
	m := workloadPattern.FindStringSubmatch(s)
	if m == nil {
		return Workload{}, fmt.Errorf("workload %q is not <namespace>:<kind>/<name>, e.g. default:deployment/foo", s)
	}
	return Workload{Namespace: m[1], Kind: m[3], Name: m[4]}, nil
}

// String is `<namespace>:<kind>/<name>`, the FLUX_WORKLOAD of the updaters.
func (w Workload) String() string { return w.Namespace + ":" + w.Kind + "/" + w.Name }
