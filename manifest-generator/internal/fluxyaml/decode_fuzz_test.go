package fluxyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeObjects decodes fuzzed generator output (strictly) and raw files (leniently). Every
// object decoded is a Kubernetes object with apiVersion, kind and name, never a List; a refusal
// is a *docError; what the strict decoder accepts, the lenient one accepts too, dropping whole
// documents at most; and the objects written back as a JSON stream decode to the same objects.
func FuzzDecodeObjects(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: one}\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: two, namespace: apps}\n",
		"apiVersion: v1\nkind: ConfigMapList\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: three}}\n",
		"---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: four\n---\n\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j1"}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j2"}}` + "\n",
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n",
		"apiVersion: v1\nmetadata:\n  name: x\n",
		"apiVersion: a/b/c\nkind: X\nmetadata:\n  name: x\n",
		"apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n  - just a string\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: other\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"}}`,
		"key: [unclosed\n",
		"hello world\n",
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: k\nresources: [a.yaml]\n",
		"replicaCount: 2\nimage:\n  tag: 1.0\n",
		"apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: List\n    items: []\n",
		"{a: 1}\n---\n[1, 2]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\ndata:\n  big: 12345678901234567890\n  small: 1.0\n  anchor: &a x\n  alias: *a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		strict, strictErr := decodeObjects(data, false, nil)
		lenient, lenientErr := decodeObjects(data, true, nil)
		for _, err := range []error{strictErr, lenientErr} {
			var de *docError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("not a docError: %#v", err)
			}
		}
		for _, d := range append(append([]decoded(nil), strict...), lenient...) {
			if reason := checkObject(d.obj); reason != "" || isList(d.obj) {
				t.Fatalf("decoded %v: %s (a List: %t)", d.obj.Object, reason, isList(d.obj))
			}
		}
		if strictErr != nil {
			return
		}
		if lenientErr != nil {
			t.Fatalf("the strict decoder accepts what the lenient one refuses: %v", lenientErr)
		}
		// The lenient objects are the strict ones, less whole documents.
		kept := map[int]bool{}
		for _, d := range lenient {
			kept[d.index] = true
		}
		j := 0
		for _, d := range strict {
			if j < len(lenient) && sameDecoded(d, lenient[j]) {
				j++
				continue
			}
			if kept[d.index] {
				t.Fatalf("the lenient decoder dropped document %d, item %d, but kept others of that document", d.index, d.item)
			}
		}
		if j != len(lenient) {
			t.Fatalf("the lenient decoder gives objects the strict one does not")
		}

		var stream bytes.Buffer
		for _, d := range strict {
			b, err := json.Marshal(d.obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			stream.Write(b)
			stream.WriteByte('\n')
		}
		again, err := decodeObjects(stream.Bytes(), false, nil)
		if err != nil {
			t.Fatalf("the objects written back do not decode: %v", err)
		}
		if len(again) != len(strict) {
			t.Fatalf("%d objects written back decode to %d", len(strict), len(again))
		}
		for i := range again {
			if !sameJSONValue(again[i].obj.Object, strict[i].obj.Object) {
				t.Fatalf("object %d written back decodes differently", i)
			}
		}
	})
}

func sameDecoded(a, b decoded) bool {
	return a.index == b.index && a.item == b.item && sameJSONValue(a.obj.Object, b.obj.Object)
}

// sameJSONValue compares values by their JSON form: the same number may be an int64 or a
// float64.
func sameJSONValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
