package builder

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzParse parses a fuzzed spec.resources entry and resourcesTemplate and builds them for a
// fuzzed input, within a short deadline. A parse error names its entry; a build returns soon
// after its deadline, whatever the templates do, never modifies its inputs, and gives only
// Kubernetes objects, carrying the common labels; rendering the same input twice gives each
// object once, as rendering it once does.
func FuzzParse(f *testing.F) {
	for _, s := range []struct{ resource, template, input string }{
		{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"podinfo-<< inputs.tenant >>","namespace":"default"},"data":{"replicas":"<< inputs.app.replicas | int >>","semver":"<< inputs.app.version | quote >>"}}`,
			"",
			`{"tenant":"team1","app":{"version":"6.7.x","replicas":2}}`,
		},
		{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"values":{"number":"<< inputs.n >>","block":"<< if inputs.on >>42<< else >>0<< end >>","<< inputs.key >>":"templated key","list":["<< inputs.n >>","static"]}}`,
			"",
			`{"n":7,"s":"12","f":1.5,"owner":"a: b # c","on":true,"key":"dynamic"}`,
		},
		{
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"static"}}`,
			"---\napiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: OCIRepository\nmetadata:\n  name: << inputs.bundle >>\n  namespace: flux-system\n<<- range $component := inputs.components >>\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: << $component >>\n  namespace: flux-system\n  <<- if inputs.decryption >>\n  annotations:\n    fluxcd.controlplane.io/reconcile: disabled\n  <<- end >>\n<<- end >>\n",
			`{"bundle":"apps","decryption":true,"components":["frontend","backend"]}`,
		},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"<< inputs.id | slugify >>","labels":{"n":"<< inputs.n | quote >>"}}}`, "", `{"id":"A b","n":1}`},
		{`"<< toYaml inputs >>"`, "", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"<< range until 3000 >><< range until 3000 >><< $x := add 1 2 >><< end >><< end >>"}}`, "", `{}`},
		{`{}`, "<< range 9000000 >>x<< end >>", `{}`},
		{`{}`, "<< define \"t\" >><< template \"t\" . >><< template \"t\" . >><< end >><< template \"t\" . >>", `{}`},
		{`{"a": "<< nope >>"}`, "", `{}`},
		{`not json`, "<< if >>", `[]`},
		{`null`, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: << inputs.missing >>\n", `{"a":null}`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"<< repeat 5000000 \"x\" >>"}}`, "<< indent 100000 \"a\" >>", `{}`},
	} {
		f.Add([]byte(s.resource), s.template, []byte(s.input))
	}
	common := &CommonMetadata{Labels: map[string]string{"sluice.example/set": "fuzz"}}
	f.Fuzz(func(t *testing.T, resource []byte, template string, input []byte) {
		if len(resource)+len(template)+len(input) > 4096 {
			return
		}
		tmpl, err := Parse([][]byte{resource}, template)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "resources[0]") && !strings.Contains(msg, resourcesTemplateName) {
				t.Fatalf("the parse error names no entry: %v", err)
			}
			return
		}
		in := Input{"id": "fuzz"}
		_ = json.Unmarshal(input, &in)
		before := copyInput(in)

		once, ok1 := buildWithin(t, tmpl, []Input{in}, common)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("the build modified its input: %v, was %v", in, before)
		}
		twice, ok2 := buildWithin(t, tmpl, []Input{in, in}, common)
		if !ok1 || !ok2 {
			return // an error: over a limit, past the deadline, or a template's own
		}
		if len(once) != len(twice) {
			t.Fatalf("one input renders %d objects, the same input twice %d", len(once), len(twice))
		}
		for _, obj := range once {
			if _, err := toObject(obj.Object); err != nil {
				t.Fatalf("not an object: %v", err)
			}
			if obj.GetLabels()["sluice.example/set"] != "fuzz" {
				t.Fatalf("%s/%s lacks the common labels", obj.GetKind(), obj.GetName())
			}
		}
	})
}

// fuzzBuildDeadline bounds each build of FuzzParse; a build must return within
// fuzzBuildSlack of it.
const (
	fuzzBuildDeadline = 100 * time.Millisecond
	fuzzBuildSlack    = 5 * time.Second
)

// buildWithin builds inputs within fuzzBuildDeadline, false on any error, and fails when the build
// does not return soon after its deadline.
func buildWithin(t *testing.T, tmpl *Templates, inputs []Input, common *CommonMetadata) ([]*unstructured.Unstructured, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), fuzzBuildDeadline)
	defer cancel()
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	done := make(chan result, 1)
	go func() {
		objs, err := tmpl.Build(ctx, inputs, common)
		done <- result{objs, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err == nil
	case <-time.After(fuzzBuildDeadline + fuzzBuildSlack):
		t.Fatalf("the build is still running %s after its deadline", fuzzBuildSlack)
		return nil, false
	}
}
