package workload

import (
	"fmt"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// strTag is the YAML tag of string scalars; setting it on a changed value
// makes the encoder quote values that would otherwise read as another type
// (an image tag "1.10", an annotation "true").
const strTag = "!!str"

// SetImageNode is SetImage for a YAML node: it sets the image of the
// container (or init container) named container in the pod template of
// node, keeping the quoting style of the old value.
func SetImageNode(node *kyaml.RNode, container, image string) (bool, error) {
	notFound := &ContainerNotFoundError{Kind: node.GetKind(), Namespace: node.GetNamespace(), Name: node.GetName(), Container: container}
	spec, err := node.Pipe(kyaml.Lookup(podSpecPath(node.GetApiVersion(), node.GetKind())...))
	if err != nil || spec == nil || spec.YNode().Kind != kyaml.MappingNode {
		return false, notFound
	}
	found, changed := false, false
	for _, field := range containerFields {
		list := spec.Field(field)
		if list == nil || list.Value.YNode().Kind != kyaml.SequenceNode {
			continue
		}
		for _, c := range list.Value.Content() {
			if c.Kind != kyaml.MappingNode || scalarField(c, "name") != container {
				continue
			}
			found = true
			ch, err := setScalarField(kyaml.NewRNode(c), "image", image)
			if err != nil {
				return false, fmt.Errorf("setting the image of container %q: %w", container, err)
			}
			changed = changed || ch
		}
	}
	if !found {
		return false, notFound
	}
	return changed, nil
}

// SetPolicyNode is SetPolicy for a YAML node: it sets the policy annotation
// to *value or removes it when value is nil or empty, creating or removing
// metadata.annotations as needed. A value is one line (a flag, a tag filter,
// a message): a line break is refused, as it would not survive the edit of
// the file's lines.
func SetPolicyNode(node *kyaml.RNode, policy string, value *string) (bool, error) {
	if value != nil && strings.ContainsAny(*value, "\r\n") {
		return false, fmt.Errorf("the value of policy %q has a line break: policy values are one line", policy)
	}
	keys := policyKeys(policy)
	if removal(value) {
		meta, err := node.Pipe(kyaml.Lookup(kyaml.MetadataField))
		if err != nil || meta == nil {
			return false, err
		}
		annotations := meta.Field(kyaml.AnnotationsField)
		if annotations == nil || annotations.Value.YNode().Kind != kyaml.MappingNode {
			return false, nil
		}
		changed := false
		for _, k := range keys {
			if annotations.Value.Field(k) == nil {
				continue
			}
			if _, err := annotations.Value.Pipe(kyaml.Clear(k)); err != nil {
				return false, err
			}
			changed = true
		}
		if changed {
			if _, err := meta.Pipe(kyaml.FieldClearer{Name: kyaml.AnnotationsField, IfEmpty: true}); err != nil {
				return false, err
			}
		}
		return changed, nil
	}
	annotations, err := node.Pipe(kyaml.LookupCreate(kyaml.MappingNode, kyaml.MetadataField, kyaml.AnnotationsField))
	if err != nil {
		return false, err
	}
	key := keys[0]
	for _, k := range keys {
		if annotations.Field(k) != nil {
			key = k
			break
		}
	}
	return setScalarField(annotations, key, *value)
}

// scalarField is the value of the scalar field name of a mapping node, or "".
func scalarField(mapping *kyaml.Node, name string) string {
	f := kyaml.NewRNode(mapping).Field(name)
	if f == nil || f.Value.YNode().Kind != kyaml.ScalarNode {
		return ""
	}
	return f.Value.YNode().Value
}

// setScalarField sets the string field name of a mapping node. An existing
// scalar keeps its node (and so its quoting style and comments).
func setScalarField(mapping *kyaml.RNode, name, value string) (bool, error) {
	if f := mapping.Field(name); f != nil && f.Value.YNode().Kind == kyaml.ScalarNode {
		n := f.Value.YNode()
		if n.Value == value && n.Tag == strTag {
			return false, nil
		}
		n.Value = value
		n.Tag = strTag
		if n.Style&(kyaml.LiteralStyle|kyaml.FoldedStyle) != 0 {
			n.Style = 0
		}
		return true, nil
	}
	return true, mapping.PipeE(kyaml.SetField(name, kyaml.NewStringRNode(value)))
}
