package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// object decodes a YAML manifest the way manifests reach the controller.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		str     string
		wantErr bool
	}{
		{in: "default:deployment/foo", want: Ref{"default", "deployment", "foo"}, str: "default:deployment/foo"},
		{in: "apps:Deployment/foo", want: Ref{"apps", "Deployment", "foo"}, str: "apps:deployment/foo"},
		{in: "<cluster>:namespace/apps", want: Ref{"", "namespace", "apps"}, str: "<cluster>:namespace/apps"},
		{in: ":helmrelease/podinfo", want: Ref{"", "helmrelease", "podinfo"}, str: "<cluster>:helmrelease/podinfo"},
		{in: "default:deployment/foo.bar-1", want: Ref{"default", "deployment", "foo.bar-1"}, str: "default:deployment/foo.bar-1"},
		{in: "deployment/foo", wantErr: true},
		{in: "default:deployment", wantErr: true},
		{in: "default:/foo", wantErr: true},
		{in: "default:deployment/", wantErr: true},
		{in: "default:deployment/foo/bar", wantErr: true},
		{in: "a/b:deployment/foo", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseRef(tt.in)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.String()).To(Equal(tt.str))
		})
	}
}

func TestRefMatches(t *testing.T) {
	namespaced := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n  namespace: apps\n")
	noNamespace := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: foo\n")
	cluster := object(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n")
	tests := []struct {
		name       string
		ref        string
		obj        *unstructured.Unstructured
		defaultNS  string
		wantResult bool
	}{
		{"exact", "apps:deployment/foo", namespaced, "default", true},
		{"kind case-insensitive", "apps:Deployment/foo", namespaced, "", true},
		{"other namespace", "default:deployment/foo", namespaced, "default", false},
		{"other name", "apps:deployment/bar", namespaced, "", false},
		{"other kind", "apps:statefulset/foo", namespaced, "", false},
		{"object without namespace in the default namespace", "default:deployment/foo", noNamespace, "default", true},
		{"object without namespace, other default", "apps:deployment/foo", noNamespace, "default", false},
		{"ref without namespace", ":deployment/foo", noNamespace, "default", true},
		{"ref without namespace, object in the default namespace", ":deployment/foo", namespaced, "apps", true},
		{"cluster-scoped", "<cluster>:namespace/apps", cluster, "default", true},
		{"cluster-scoped, no default", "<cluster>:namespace/apps", cluster, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ref, err := ParseRef(tt.ref)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ref.Matches(tt.obj, tt.defaultNS)).To(Equal(tt.wantResult))
		})
	}
}
