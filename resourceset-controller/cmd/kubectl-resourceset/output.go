package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// writeYAMLStream prints the objects as one multi-document YAML stream, "---" between them.
func writeYAMLStream(w io.Writer, objects []*unstructured.Unstructured) error {
	bw := bufio.NewWriter(w)
	for i, obj := range objects {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", obj.GetName(), err)
		}
		if i > 0 {
			bw.WriteString("---\n")
		}
		bw.Write(data)
	}
	return bw.Flush()
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
