package update

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// edit is one workload's part of a change: new images for some of its containers, or new
// values of its policies. A ManifestUpdate is one edit, or, with spec.containerImages, one per
// workload it names.
type edit struct {
	ref      workload.Ref
	images   []generatorv1.ContainerImageUpdate
	policies []generatorv1.PolicyChange
}

// editsOf lists the edits of a ManifestUpdate's spec, in the order of its workloads.
func editsOf(spec generatorv1.ManifestUpdateSpec) ([]*edit, error) {
	if len(spec.ContainerImages) == 0 {
		ref, err := workload.ParseRef(spec.Workload)
		if err != nil {
			return nil, fmt.Errorf("spec.workload: %w", err)
		}
		e := &edit{ref: ref, policies: spec.Policies}
		if spec.ContainerImage != nil {
			e.images = []generatorv1.ContainerImageUpdate{*spec.ContainerImage}
		}
		return []*edit{e}, nil
	}
	var edits []*edit
	byRef := map[workload.Ref]*edit{}
	for i, ci := range spec.ContainerImages {
		ref, err := workload.ParseRef(ci.Workload)
		if err != nil {
			return nil, fmt.Errorf("spec.containerImages[%d].workload: %w", i, err)
		}
		e, ok := byRef[ref]
		if !ok {
			e = &edit{ref: ref}
			byRef[ref] = e
			edits = append(edits, e)
		}
		e.images = append(e.images, ci.ContainerImageUpdate)
	}
	return edits, nil
}

// apply makes the edit on an object.
func (e *edit) apply(u *unstructured.Unstructured) (bool, error) {
	changed := false
	for _, ci := range e.images {
		c, err := workload.SetImage(u, ci.Container, ci.Image)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	for _, p := range e.policies {
		if workload.SetPolicy(u, p.Name, p.Value) {
			changed = true
		}
	}
	return changed, nil
}

// applyNode makes the edit on the workload's node of a raw file, keeping its layout.
func (e *edit) applyNode(node *kyaml.RNode) error {
	for _, ci := range e.images {
		if _, err := workload.SetImageNode(node, ci.Container, ci.Image); err != nil {
			return err
		}
	}
	for _, p := range e.policies {
		if _, err := workload.SetPolicyNode(node, p.Name, p.Value); err != nil {
			return err
		}
	}
	return nil
}
