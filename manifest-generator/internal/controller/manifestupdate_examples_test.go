package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The examples of docs/fluxyaml.md (Flux v1's .flux.yaml examples), each through the whole loop:
// the generation applies the generated workload, a ManifestUpdate commits a change to the Git
// server touching only the expected file, and the next artifact applies the change.

// deployment reads the Deployment ns/name the generation applied.
func deployment(g Gomega, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
	return d
}

func containerImage(d *appsv1.Deployment, container string) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

const exampleDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: __NS__
spec:
  replicas: 1
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: app
          image: ghcr.io/stefanprodan/podinfo:6.0.0
        - name: sidecar
          image: busybox:1.36
`

const exampleImageUpdate = `
metadata:
  name: podinfo-6-1
spec:
  generationRef:
    name: apps
  workload: __NS__:deployment/podinfo
  containerImage:
    container: app
    image: ghcr.io/stefanprodan/podinfo:6.1.0
`

// kubeyaml stands in for kubeyaml (the updater tool of docs/fluxyaml.md, not in the controller image): enough
// of `kubeyaml image` and `kubeyaml annotate` for the patch file of this fixture, reading YAML
// documents on stdin and writing them to stdout with the change made to the named workload's
// document. `annotate KEY=` (an unset FLUX_POLICY_VALUE) removes the annotation.
const kubeyaml = `#!/bin/sh
op=$1; shift
while [ $# -gt 0 ]; do
  case $1 in
    --namespace) ns=$2; shift 2 ;;
    --kind) kind=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --container) container=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    *) kv=$1; shift ;;
  esac
done
exec awk -v op="$op" -v ns="$ns" -v kind="$kind" -v name="$name" -v container="$container" -v image="$image" -v kv="$kv" '
function flush(   i, k, nm, nsv, meta, ann, found, c, eq, key, val, skip) {
  for (i = 1; i <= n; i++) {
    if (doc[i] ~ /^kind: /) k = substr(doc[i], 7)
    else if (doc[i] ~ /^  name: / && nm == "") nm = substr(doc[i], 9)
    else if (doc[i] ~ /^  namespace: /) nsv = substr(doc[i], 14)
    else if (doc[i] ~ /^metadata:/) meta = i
    else if (doc[i] ~ /^  annotations:/) ann = i
  }
  if (n > 0 && tolower(k) == tolower(kind) && nm == name && nsv == ns) {
    if (op == "image") {
      for (i = 1; i <= n; i++) {
        if (doc[i] ~ ("^ *- name: " container "$")) c = 1
        else if (c && doc[i] ~ /^ *image: /) { sub(/image: .*/, "image: " image, doc[i]); c = 0 }
      }
    } else if (op == "annotate") {
      eq = index(kv, "="); key = substr(kv, 1, eq - 1); val = substr(kv, eq + 1)
      for (i = 1; i <= n; i++) if (index(doc[i], "    " key ": ") == 1) found = i
      if (found && val == "") skip = found
      else if (found) doc[found] = "    " key ": \"" val "\""
      else if (val != "" && ann) add[ann] = "    " key ": \"" val "\""
      else if (val != "") add[meta] = "  annotations:\n    " key ": \"" val "\""
    }
  }
  for (i = 1; i <= n; i++) { if (i != skip) print doc[i]; if (i in add) print add[i] }
  n = 0; split("", add)
}
/^---/ { flush(); print; next }
{ doc[++n] = $0 }
END { flush() }'
`

// The kustomize commandUpdated example of docs/fluxyaml.md: `kustomize build .` generates, the containerImage
// and policy updaters edit flux-patch.yaml (a kustomize patch) with kubeyaml.
func TestManifestUpdateExampleKustomizeCommandUpdated(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{
		"apps/.flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
  updaters:
    # use kubeyaml on flux-patch.yaml
    - containerImage:
        command: >-
          cat flux-patch.yaml |
          sh ./kubeyaml image --namespace $FLUX_WL_NS --kind $FLUX_WL_KIND --name $FLUX_WL_NAME --container $FLUX_CONTAINER --image "$FLUX_IMG:$FLUX_TAG"
          > new-flux-patch.yaml &&
          mv new-flux-patch.yaml flux-patch.yaml
      policy:
        command: >-
          cat flux-patch.yaml |
          sh ./kubeyaml annotate --namespace $FLUX_WL_NS --kind $FLUX_WL_KIND --name $FLUX_WL_NAME "fluxcd.io/$FLUX_POLICY=$FLUX_POLICY_VALUE"
          > new-flux-patch.yaml &&
          mv new-flux-patch.yaml flux-patch.yaml
`,
		"apps/kubeyaml":           kubeyaml,
		"apps/kustomization.yaml": "resources:\n  - podinfo.yaml\npatches:\n  - path: flux-patch.yaml\n",
		"apps/podinfo.yaml":       exampleDeployment,
		"apps/flux-patch.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: __NS__
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/stefanprodan/podinfo:6.0.1
`,
	})
	f.publishHead(t)
	gen := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	g.Eventually(readyCondition(gen), timeout).Should(HavePrefix("True|"))
	g.Expect(containerImage(deployment(g, f.ns, "podinfo"), "app")).To(Equal("ghcr.io/stefanprodan/podinfo:6.0.1"), "the patch applies")

	key := f.createUpdate(t, exampleImageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/flux-patch.yaml")).To(ContainSubstring("image: ghcr.io/stefanprodan/podinfo:6.1.0"))

	policy := f.createUpdate(t, `
metadata:
  name: podinfo-automated
spec:
  generationRef:
    name: apps
  workload: __NS__:deployment/podinfo
  policies:
    - name: automated
      value: "true"
`)
	g.Eventually(updateReady(policy), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("3"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))

	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return containerImage(deployment(g, f.ns, "podinfo"), "app") }, timeout).
		Should(Equal("ghcr.io/stefanprodan/podinfo:6.1.0"))
	d := deployment(g, f.ns, "podinfo")
	g.Expect(d.Annotations).To(HaveKeyWithValue("fluxcd.io/automated", "true"))
	g.Expect(containerImage(d, "sidecar")).To(Equal("busybox:1.36"))
}

// The patchUpdated helm example of docs/fluxyaml.md: `helm template ../charts/mychart -f overrides.yaml`
// generates, the change is kept in flux-patch.yaml, created by the first update.
func TestManifestUpdateExampleHelmPatchUpdated(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{
		"charts/mychart/Chart.yaml":  "apiVersion: v2\nname: mychart\nversion: 0.1.0\n",
		"charts/mychart/values.yaml": "namespace: default\nreplicas: 1\nimage: ghcr.io/stefanprodan/podinfo:6.0.0\n",
		"charts/mychart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: {{ .Values.namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: app
          image: {{ .Values.image }}
        - name: sidecar
          image: busybox:1.36
`,
		"apps/.flux.yaml": `version: 1
patchUpdated:
  generators:
    - command: helm template ../charts/mychart -f overrides.yaml
  patchFile: flux-patch.yaml
`,
		"apps/overrides.yaml": "namespace: __NS__\nreplicas: 2\n",
	})
	f.publishHead(t)
	gen := client.ObjectKey{Namespace: f.ns, Name: "apps"}
	g.Eventually(readyCondition(gen), timeout).Should(HavePrefix("True|"))
	d := deployment(g, f.ns, "podinfo")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(containerImage(d, "app")).To(Equal("ghcr.io/stefanprodan/podinfo:6.0.0"))

	key := f.createUpdate(t, exampleImageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))

	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return containerImage(deployment(g, f.ns, "podinfo"), "app") }, timeout).
		Should(Equal("ghcr.io/stefanprodan/podinfo:6.1.0"))
	d = deployment(g, f.ns, "podinfo")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(containerImage(d, "sidecar")).To(Equal("busybox:1.36"))
}
