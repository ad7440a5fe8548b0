package patch

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzApply applies fuzzed patch files to the generated objects of the tests (a Deployment, a
// Service and a HelmRelease). Applying never modifies the generated objects and keeps their
// order and identity; an object no entry names comes out unchanged (so a patch file of
// comments only is the identity); the entries that name no generated object are the ones
// dropped, in file order.
func FuzzApply(f *testing.F) {
	for _, s := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\n  annotations:\n    fluxcd.io/automated: \"true\"\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:1.1\n",
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  values:\n    image:\n      tag: 6.1.0\n    hosts: [c.example.com]\n    replicaCount: null\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gone\n  namespace: default\nspec:\n  replicas: 3\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: default\n  labels:\n    patched: \"yes\"\n",
		"# written when the chart rendered apps/v1beta2\napiVersion: apps/v1beta2\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  replicas: 3\n",
		"# managed by sluice\n---\n\n",
		"",
		imageEntry,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n      - $patch: delete\n        name: sidecar\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  $patch: replace\n  replicas: 2\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: default\n---\nkind: [unclosed\n",
		"apiVersion: v1\nmetadata:\n  name: app\n",
		"spec:\n  replicas: 1\n",
		"apiVersion: a/b/c\nkind: Service\nmetadata:\n  name: app\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: default\n--- x\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n      - image: x\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec: 7\n",
		"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"app\", \"namespace\": \"default\"}, \"spec\": {\"ports\": null}}",
	} {
		f.Add([]byte(s))
	}
	generated := objects(f, generatedYAML)
	f.Fuzz(func(t *testing.T, patchFile []byte) {
		if len(patchFile) > 4096 {
			return
		}
		before := deepCopies(generated)
		patched, dropped, err := Apply(generated, patchFile, nil)
		if !reflect.DeepEqual(generated, before) {
			t.Fatal("Apply modified the generated objects")
		}
		if err != nil {
			return
		}
		docs, err := parseFile(patchFile)
		if err != nil {
			t.Fatalf("Apply accepts a patch file parseFile refuses: %v", err)
		}
		named := map[key]bool{}
		for _, d := range docs {
			if d.isEntry() {
				named[d.id.key()] = true
			}
		}
		if len(patched) != len(generated) {
			t.Fatalf("%d objects patched into %d", len(generated), len(patched))
		}
		present := map[key]bool{}
		for i, g := range generated {
			k := IDOf(g).key()
			present[k] = true
			if IDOf(patched[i]).key() != k || patched[i].GetAPIVersion() != g.GetAPIVersion() {
				t.Fatalf("object %d was %s, is %s", i, IDOf(g), IDOf(patched[i]))
			}
			if !named[k] && !reflect.DeepEqual(patched[i], g) {
				t.Fatalf("%s changed, though no entry names it", IDOf(g))
			}
		}
		var wantDropped []ID
		for _, d := range docs {
			if d.isEntry() && !present[d.id.key()] {
				wantDropped = append(wantDropped, d.id)
			}
		}
		if !reflect.DeepEqual(dropped, wantDropped) {
			t.Fatalf("dropped %v, want %v", dropped, wantDropped)
		}
	})
}

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
