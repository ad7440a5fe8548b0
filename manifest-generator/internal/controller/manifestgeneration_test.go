package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testenv"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

func createGeneration(t testing.TB, ns, manifest string) client.ObjectKey {
	t.Helper()
	obj := &generatorv1.ManifestGeneration{}
	NewWithT(t).Expect(yaml.UnmarshalStrict([]byte(manifest), obj)).To(Succeed())
	obj.Namespace = ns
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

func getGeneration(g Gomega, key client.ObjectKey) *generatorv1.ManifestGeneration {
	obj := &generatorv1.ManifestGeneration{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// readyCondition is "status|reason|message" of Ready once it belongs to the current spec and
// reconcile request.
func readyCondition(key client.ObjectKey) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getGeneration(g, key)
		c := conditions.Get(obj, meta.ReadyCondition)
		if c == nil || c.ObservedGeneration != obj.Generation || obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt {
			return "not observed yet"
		}
		// Ready=True counts with the status fields of the same reconcile (the message may go on
		// with what waits behind closed gates).
		applied := "Applied revision: " + obj.Status.LastAppliedRevision
		if c.Status == "True" && (obj.Status.ObservedGeneration != obj.Generation ||
			(c.Message != applied && !strings.HasPrefix(c.Message, applied+"; "))) {
			return "not observed yet"
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
}

func configMap(g Gomega, ns, name string) map[string]any {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	data, _, _ := unstructured.NestedMap(u.Object, "data")
	return data
}

const generation = `
metadata:
  name: apps
spec:
  sourceRef:
    kind: GitRepository
    name: repo
  path: ./staging
  interval: 1h
`

// Raw mode (no .flux.yaml): the YAML files under the path are applied; a new revision without
// one of them prunes it. status.history records both revisions.
func TestManifestGenerationRawManifests(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:1111", map[string]string{
		"staging/a.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: '1'\n",
		"staging/b.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  v: '1'\n",
		"production/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:1111"))
	g.Expect(configMap(g, ns, "a")).To(HaveKeyWithValue("v", "1"))
	g.Expect(configMap(g, ns, "b")).NotTo(BeNil())
	g.Expect(configMap(g, ns, "c")).To(BeNil(), "outside the target path")
	obj := getGeneration(g, key)
	g.Expect(obj.Status.ConfigFile).To(BeEmpty())
	g.Expect(obj.Status.Inventory.Entries).To(HaveLen(2))

	publish(t, ns, "repo", "main@sha1:2222", map[string]string{
		"staging/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: '2'\n",
	})
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:2222"))
	g.Expect(configMap(g, ns, "a")).To(HaveKeyWithValue("v", "2"))
	g.Expect(configMap(g, ns, "b")).To(BeNil(), "pruned")
	g.Expect(getGeneration(g, key).Status.LastAttemptedRevision).To(Equal("main@sha1:2222"))
	// status.history keeps each revision applied, newest first, with since when.
	hist := getGeneration(g, key).Status.History
	g.Expect(hist).To(HaveLen(2))
	g.Expect(hist[0]).To(And(HaveField("Digest", "main@sha1:2222"), HaveField("LastReconciledStatus", "ReconciliationSucceeded")))
	g.Expect(hist[1].Digest).To(Equal("main@sha1:1111"))
	g.Expect(hist[0].FirstReconciled.Time).NotTo(BeTemporally("<", hist[1].FirstReconciled.Time))
}

// The --git-path=staging layout of docs/fluxyaml.md: .flux.yaml at the root, commands run in staging; the
// kustomize generator's output is applied. An unchanged revision is applied again (drift
// correction) from the cache, without running the generator.
func TestManifestGenerationKustomizeGenerator(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	counter := proctest.SharedDir(t)
	publish(t, ns, "repo", "main@sha1:3333", map[string]string{
		".flux.yaml":                 "version: 1\ncommandUpdated:\n  generators:\n    - command: mktemp $COUNTER_DIR/run.XXXXXX >/dev/null && kustomize build .\n",
		"staging/kustomization.yaml": "resources: [app.yaml]\nnamePrefix: staging-\n",
		"staging/app.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  env: staging\n",
	})
	key := createGeneration(t, ns, generation+"  env:\n    - name: COUNTER_DIR\n      value: "+counter+"\n")
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:3333"))
	g.Expect(configMap(g, ns, "staging-app")).To(HaveKeyWithValue("env", "staging"))
	g.Expect(getGeneration(g, key).Status.ConfigFile).To(Equal(".flux.yaml"))
	runs := func() int { return proctest.Runs(t, counter) }
	g.Expect(runs()).To(Equal(1))

	// Drift, then a reconcile request: corrected from the cache, no generator run.
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "staging-app"}, cm)).To(Succeed())
	g.Expect(unstructured.SetNestedField(cm.Object, "edited", "data", "env")).To(Succeed())
	g.Expect(k8s.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	testenv.Poke(t, k8s, &generatorv1.ManifestGeneration{ObjectMeta: metaOf(key)})
	g.Eventually(func(g Gomega) any { return configMap(g, ns, "staging-app") }, timeout).Should(HaveKeyWithValue("env", "staging"))
	g.Expect(runs()).To(Equal(1), "the unchanged revision came from the cache")
}

// A generator that fails keeps what was applied; the condition names the command and its
// stderr. An invalid .flux.yaml stalls with the field named.
func TestManifestGenerationBadRevisions(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	good := map[string]string{
		".flux.yaml":       "version: 1\ncommandUpdated:\n  generators:\n    - command: cat app.yaml\n",
		"staging/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: '1'\n",
	}
	publish(t, ns, "repo", "main@sha1:4444", good)
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))

	publish(t, ns, "repo", "main@sha1:5555", map[string]string{
		".flux.yaml":       "version: 1\ncommandUpdated:\n  generators:\n    - command: echo 'chart not found' >&2; exit 3\n",
		"staging/app.yaml": good["staging/app.yaml"],
	})
	g.Eventually(readyCondition(key), timeout).Should(And(HavePrefix("False|BuildFailed|"),
		ContainSubstring("chart not found"), ContainSubstring(".flux.yaml")))
	g.Expect(configMap(g, ns, "app")).NotTo(BeNil(), "the last applied state stays")

	publish(t, ns, "repo", "main@sha1:6666", map[string]string{
		".flux.yaml":       "version: 1\ncommandUpdated:\n  generators:\n    - command: cat app.yaml\n  generatorz: []\n",
		"staging/app.yaml": good["staging/app.yaml"],
	})
	g.Eventually(func(g Gomega) string {
		c := conditions.Get(getGeneration(g, key), meta.StalledCondition)
		if c == nil {
			return ""
		}
		return c.Reason + "|" + c.Message
	}, timeout).Should(And(HavePrefix("BuildFailed|"), ContainSubstring("generatorz")))
	g.Expect(configMap(g, ns, "app")).NotTo(BeNil())
	g.Eventually(func(g Gomega) string { return getGeneration(g, key).Status.LastAttemptedRevision }, timeout).Should(Equal("main@sha1:6666"))
	g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:4444"))
}
