package controller

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// spec.steps, as flux-operator's: applied in order, each health-checked before the next. A step
// whose objects never become ready (a Deployment no controller runs here) stops the sequence
// with a message naming it; what it applied is in the inventory, and the next steps are not
// applied. When every step passes, each one's changes are an event of their own.
func TestResourceSetStepsApplyInOrder(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: staged
spec:
  inputs:
    - app: web
  steps:
    - name: config
      resourcesTemplate: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: << inputs.app >>-config
    - name: migrate
      resources:
        - apiVersion: v1
          kind: ConfigMap
          metadata:
            name: << inputs.app >>-migrated
    - name: deploy
      resources:
        - apiVersion: v1
          kind: ConfigMap
          metadata:
            name: << inputs.app >>-deployed
`)
	readyIn(t, key)
	rv := func(name string) int {
		o := getObject(g, "v1", "ConfigMap", ns, name)
		g.Expect(o).NotTo(BeNil(), name)
		n, err := strconv.Atoi(o.GetResourceVersion())
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	g.Expect(rv("web-config")).To(BeNumerically("<", rv("web-migrated")))
	g.Expect(rv("web-migrated")).To(BeNumerically("<", rv("web-deployed")))
	g.Expect(inventoryIDs(g, key)).To(HaveLen(3))
	g.Eventually(eventsOf(key), timeout).Should(ContainElements(
		"Normal ApplySucceeded: step \"config\": ConfigMap/"+ns+"/web-config created",
		"Normal ApplySucceeded: step \"migrate\": ConfigMap/"+ns+"/web-migrated created",
		"Normal ApplySucceeded: ConfigMap/"+ns+"/web-deployed created"))
	g.Expect(getResourceSet(g, key).Status.History[0].Metadata).To(HaveKeyWithValue("steps", "3"))

	// A step that never becomes ready: the sequence stops there.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Steps[1].Resources = append(rs.Spec.Steps[1].Resources, jsonOf(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: migration
spec:
  replicas: 1
  selector:
    matchLabels: {app: migration}
  template:
    metadata:
      labels: {app: migration}
    spec:
      containers:
        - name: migration
          image: registry.invalid/migration:1
`))
		rs.Spec.Steps[1].Timeout = durationOf(t, "2s")
		rs.Spec.Steps[2].Resources = append(rs.Spec.Steps[2].Resources, jsonOf(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: after-migration
`))
	})
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(HavePrefix(
		`False|HealthCheckFailed|step 2/3 "migrate" health check failed: `))
	g.Expect(getObject(g, "apps/v1", "Deployment", ns, "migration")).NotTo(BeNil())
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "after-migration")).To(BeNil(), "the step after the failed one is not applied")
	g.Expect(inventoryIDs(g, key)).To(ContainElement(ns + "_migration_apps_Deployment@v1"))
}

// jsonOf is a resource of spec.resources, from YAML.
func jsonOf(t *testing.T, manifest string) *apiextensionsv1.JSON {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

func durationOf(t *testing.T, s string) *metav1.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return &metav1.Duration{Duration: d}
}

// Deleting a ResourceSet deletes its steps last first (flux-operator #909): a watch sees the
// objects of the last step go before those of the one before it.
func TestResourceSetStepsDeleteInReverse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: staged
spec:
  steps:
    - name: database
      resources:
        - {apiVersion: v1, kind: ConfigMap, metadata: {name: database}}
    - name: migration
      resources:
        - {apiVersion: v1, kind: ConfigMap, metadata: {name: migration}}
    - name: application
      resources:
        - {apiVersion: v1, kind: ConfigMap, metadata: {name: application}}
`)
	readyIn(t, key)
	wc, err := client.NewWithWatch(env.Config, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	g.Expect(k8s.Delete(ctx, &rsv1.ResourceSet{ObjectMeta: metaOf(key)})).To(Succeed())
	var deleted []string
	deadline := time.After(timeout)
	for len(deleted) < 3 {
		select {
		case e := <-w.ResultChan():
			if cm, ok := e.Object.(*corev1.ConfigMap); ok && e.Type == watch.Deleted {
				deleted = append(deleted, cm.Name)
			}
		case <-deadline:
			t.Fatalf("deleted so far: %v", deleted)
		}
	}
	g.Expect(deleted).To(Equal([]string{"application", "migration", "database"}))
}
