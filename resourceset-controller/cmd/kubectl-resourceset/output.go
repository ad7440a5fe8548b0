package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// writeYAMLStream prints the objects of the ResourceSets as one multi-document YAML stream, as
// flux-operator's build prints it: "---" before each object, and a "# step: NAME" line before
// the objects of each step that has some.
func writeYAMLStream(w io.Writer, sets []rendered) error {
	bw := bufio.NewWriter(w)
	for _, set := range sets {
		objects := set.objects
		if len(set.steps) == 0 {
			if err := writeDocuments(bw, objects); err != nil {
				return err
			}
			continue
		}
		for _, step := range set.steps {
			if step.Size > 0 {
				fmt.Fprintf(bw, "# step: %s\n", step.Name)
			}
			if err := writeDocuments(bw, objects[:step.Size]); err != nil {
				return err
			}
			objects = objects[step.Size:]
		}
	}
	return bw.Flush()
}

// writeDocuments writes each object as a YAML document, "---" first.
func writeDocuments(w io.Writer, objects []*unstructured.Unstructured) error {
	for _, obj := range objects {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", obj.GetName(), err)
		}
		io.WriteString(w, "---\n")
		w.Write(data)
	}
	return nil
}

// unifiedDiff is the unified diff (3 lines of context) of the YAML of two versions of an
// object, with go-difflib, the diff library of the module graph.
func unifiedDiff(subject string, live, merged *unstructured.Unstructured) (string, error) {
	a, err := yaml.Marshal(live.Object)
	if err != nil {
		return "", err
	}
	b, err := yaml.Marshal(merged.Object)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(a)),
		B:        difflib.SplitLines(string(b)),
		FromFile: "live/" + subject,
		ToFile:   "merged/" + subject,
		Context:  3,
	})
}
