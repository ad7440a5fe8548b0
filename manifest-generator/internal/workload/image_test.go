package workload

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// podSpec is a pod spec with init containers, indented to sit under a key
// indented by the given number of spaces.
func podSpec(indent int) string {
	pad := strings.Repeat(" ", indent+2)
	return "\n" +
		pad + "initContainers:\n" +
		pad + "- name: migrate\n" +
		pad + "  image: migrate:1.0\n" +
		pad + "containers:\n" +
		pad + "- name: app\n" +
		pad + "  image: app:1.0\n" +
		pad + "- name: sidecar\n" +
		pad + "  image: proxy:2.0\n"
}

// workloads are one manifest of each kind SetImage knows, with the same pod spec.
var workloads = map[string]string{
	"Deployment":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\n  namespace: default\nspec:\n  template:\n    spec:" + podSpec(4),
	"StatefulSet": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: w\nspec:\n  template:\n    spec:" + podSpec(4),
	"DaemonSet":   "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: w\nspec:\n  template:\n    spec:" + podSpec(4),
	"Job":         "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: w\nspec:\n  template:\n    spec:" + podSpec(4),
	"CronJob":     "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: w\nspec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:" + podSpec(8),
	"Pod":         "apiVersion: v1\nkind: Pod\nmetadata:\n  name: w\nspec:" + podSpec(0),
	"Rollout":     "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: w\nspec:\n  template:\n    spec:" + podSpec(4),
}

func TestSetImage(t *testing.T) {
	for kind, manifest := range workloads {
		for _, tt := range []struct {
			container, image string
			changed          bool
			want             map[string]string
		}{
			{"app", "app:1.1", true, map[string]string{"migrate": "migrate:1.0", "app": "app:1.1", "sidecar": "proxy:2.0"}},
			{"migrate", "migrate:2.0", true, map[string]string{"migrate": "migrate:2.0", "app": "app:1.0", "sidecar": "proxy:2.0"}},
			{"sidecar", "proxy:2.0", false, map[string]string{"migrate": "migrate:1.0", "app": "app:1.0", "sidecar": "proxy:2.0"}},
		} {
			t.Run(kind+"/"+tt.container, func(t *testing.T) {
				g := NewWithT(t)
				u := object(t, manifest)
				g.Expect(Images(u)).To(HaveLen(3), "fixture")
				changed, err := SetImage(u, tt.container, tt.image)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(changed).To(Equal(tt.changed))
				g.Expect(Images(u)).To(Equal(tt.want))

				// The node form agrees.
				node, err := kyaml.Parse(manifest)
				g.Expect(err).NotTo(HaveOccurred())
				changed, err = SetImageNode(node, tt.container, tt.image)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(changed).To(Equal(tt.changed))
				fromNode := object(t, node.MustString())
				g.Expect(fromNode.Object).To(Equal(u.Object))
			})
		}
	}
}

func TestSetImageErrors(t *testing.T) {
	tests := []struct {
		name, manifest, container, wantErr string
	}{
		{"missing container", workloads["Deployment"], "web", `kind Deployment has no container "web" (default:deployment/w)`},
		{"no pod template", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\ndata:\n  a: b\n", "app", `kind ConfigMap has no container "app" (default:configmap/c)`},
		{"custom resource without containers", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  values:\n    image: podinfo:6\n", "podinfo", `kind HelmRelease has no container "podinfo" (apps:helmrelease/podinfo)`},
		{"cronjob is not a deployment", "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: w\nspec:\n  template:\n    spec:" + podSpec(4), "app", `kind CronJob has no container "app" (<cluster>:cronjob/w)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := object(t, tt.manifest)
			before := u.DeepCopy()
			changed, err := SetImage(u, tt.container, "x:1")
			g.Expect(err).To(MatchError(tt.wantErr))
			var notFound *ContainerNotFoundError
			g.Expect(errors.As(err, &notFound)).To(BeTrue())
			g.Expect(changed).To(BeFalse())
			g.Expect(u).To(Equal(before))

			node, err := kyaml.Parse(tt.manifest)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = SetImageNode(node, tt.container, "x:1")
			g.Expect(err).To(MatchError(tt.wantErr))
		})
	}
}

func TestSetImageNodeKeepsStyle(t *testing.T) {
	g := NewWithT(t)
	node, err := kyaml.Parse("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: 'a:1' # pinned\n  - name: b\n    image: b\n")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = SetImageNode(node, "a", "a:2")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = SetImageNode(node, "b", "1.10") // would read as a number unquoted
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(node.MustString()).To(Equal("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: 'a:2' # pinned\n  - name: b\n    image: \"1.10\"\n"))
	u := object(t, node.MustString())
	g.Expect(Images(u)).To(Equal(map[string]string{"a": "a:2", "b": "1.10"}))
}
