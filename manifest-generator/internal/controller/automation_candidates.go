package controller

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// defaultTagFilter is the filter of a container whose workload sets no fluxcd.io/tag.<container>,
// as in Flux v1: every tag.
const defaultTagFilter = "glob:*"

// automatedContainer is a container of a generated workload that is automated: its policies
// come from the generated manifests, whatever produced them.
type automatedContainer struct {
	ref       workload.Ref
	container string
	image     string
	filter    string
	locked    bool
	// pullSecrets are the names of the workload's imagePullSecrets (in its namespace).
	pullSecrets []string
	// pinned writes image:tag@digest (fluxcd.io/digest.<container>: pinned).
	pinned bool
	// minAge is fluxcd.io/minimum-age.<container>, or spec.automation.minimumAge ("" when
	// neither); parsed by the scan, which reports a bad one.
	minAge string
	// verify requires a cosign signature (fluxcd.io/verify.<container>: cosign, or
	// spec.automation.verify).
	verify string
}

// automatedContainers lists the containers of the objects annotated fluxcd.io/automated: "true",
// sorted by workload and container. Objects without a namespace are in namespace.
func automatedContainers(objects []*unstructured.Unstructured, namespace string) []automatedContainer {
	var out []automatedContainer
	for _, u := range objects {
		policies := workload.Policies(u)
		if policies[workload.PolicyAutomated] != "true" {
			continue
		}
		images := workload.Images(u)
		if len(images) == 0 {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		ref := workload.Ref{Namespace: ns, Kind: u.GetKind(), Name: u.GetName()}
		secrets := pullSecrets(u)
		for container, image := range images {
			filter := policies[workload.TagPolicy(container)]
			if filter == "" {
				filter = defaultTagFilter
			}
			out = append(out, automatedContainer{ref: ref, container: container, image: image, filter: filter,
				locked: policies[workload.PolicyLocked] == "true", pullSecrets: secrets,
				pinned: policies[generatorv1.DigestPolicyPrefix+container] == generatorv1.DigestPinned,
				minAge: policies[generatorv1.MinimumAgePolicyPrefix+container],
				verify: policies[generatorv1.VerifyPolicyPrefix+container]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := out[i].ref.String(), out[j].ref.String(); a != b {
			return a < b
		}
		return out[i].container < out[j].container
	})
	return out
}

// pullSecrets are the imagePullSecrets of the pod template of u.
func pullSecrets(u *unstructured.Unstructured) []string {
	spec := workload.PodSpec(u)
	list, _ := spec["imagePullSecrets"].([]any)
	var names []string
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if name, _ := m["name"].(string); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}
