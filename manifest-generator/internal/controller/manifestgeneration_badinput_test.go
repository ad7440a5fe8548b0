package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/build"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

const appV1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: '1'\n"

// fluxYAML is a commandUpdated .flux.yaml with one generator command, whose timeout is 2s.
func fluxYAML(command string) string { return fluxYAMLTimeout(command, "2s") }

// fluxYAMLTimeout is fluxYAML with another timeout.
func fluxYAMLTimeout(command, timeout string) string {
	return fmt.Sprintf("version: 1\ncommandUpdated:\n  generators:\n    - command: %q\n      timeout: %s\n", command, timeout)
}

// timeoutOf is the generator timeout of a case of TestManifestGenerationBadGenerators.
func timeoutOf(name string) string {
	if name == "hangs past its timeout" {
		return "2s"
	}
	return "30s"
}

// Generators that hang, flood, go over the runner's budget or print garbage: each revision fails
// with a condition naming the command and the config file (and the limit passed), the hanging
// command's whole process tree is killed, and what was applied before stays.
func TestManifestGenerationBadGenerators(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	pids := proctest.SharedDir(t)
	publish(t, ns, "repo", "main@sha1:a001", map[string]string{".flux.yaml": fluxYAML("cat app.yaml"), "staging/app.yaml": appV1})
	key := createGeneration(t, ns, generation+"  env:\n    - name: PID_DIR\n      value: "+pids+"\n")
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:a001"))

	// Only the hanging command meets its timeout (2s); the others end on their own or at a limit,
	// well within 30s however loaded the machine.
	for i, tc := range []struct {
		name, command string
		message       []string
	}{
		{"hangs past its timeout",
			"echo $$ > $PID_DIR/shell; sleep 300 & echo $! > $PID_DIR/child; wait",
			[]string{"timed out after 2s", ".flux.yaml"}},
		{"prints 1 GiB",
			"head -c 1073741824 /dev/zero",
			[]string{"output larger than 67108864 bytes", ".flux.yaml"}},
		{"fills the disk",
			"head -c 40000000 /dev/zero > big; sleep 5; cat app.yaml",
			[]string{".flux.yaml", "the session's files are over the runner's limit of 33554432 bytes (--max-session-disk)"}},
		{"starts processes without end",
			"i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; wait",
			[]string{".flux.yaml", "Cannot fork", "a session may run 128 processes and threads, --max-session-processes"}},
		{"prints something that is not YAML",
			"echo 'kind: [unclosed'",
			[]string{".flux.yaml", "printed output that is not valid YAML or JSON"}},
		{"prints an object without a kind",
			"printf 'apiVersion: v1\\nmetadata:\\n  name: nameless\\n'",
			[]string{".flux.yaml", "is not a Kubernetes object: document 1: missing kind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rev := fmt.Sprintf("main@sha1:b%03d", i)
			publish(t, ns, "repo", rev, map[string]string{".flux.yaml": fluxYAMLTimeout(tc.command, timeoutOf(tc.name)), "staging/app.yaml": appV1})
			g.Eventually(func(g Gomega) string { return getGeneration(g, key).Status.LastAttemptedRevision }, timeout).Should(Equal(rev))
			g.Eventually(readyCondition(key), timeout).Should(HavePrefix("False|BuildFailed|"))
			msg := readyCondition(key)(g)
			t.Log(msg)
			for _, m := range tc.message {
				g.Expect(msg).To(ContainSubstring(m))
			}
			g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "1"), "the last applied state stays")
			g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:a001"))
		})
	}
	for _, f := range []string{"shell", "child"} {
		pid := proctest.ReadPid(g, filepath.Join(pids, f))
		g.Eventually(func() bool { return proctest.Gone(pid) }, timeout).Should(BeTrue(), "the generator's %s (%d) survived its timeout", f, pid)
	}
}

// A revision whose output holds one invalid object applies nothing of it: every object is
// dry-run before any is applied.
func TestManifestGenerationNothingHalfApplied(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:c001", map[string]string{"staging/app.yaml": appV1})
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))

	publish(t, ns, "repo", "main@sha1:c002", map[string]string{
		"staging/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: '2'\n",
		"staging/new.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n",
		"staging/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - port: 99999\n",
	})
	g.Eventually(readyCondition(key), timeout).Should(And(HavePrefix("False|ReconciliationFailed|"), ContainSubstring("Service/"+ns+"/web")))
	t.Log(readyCondition(key)(g))
	g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "1"))
	g.Expect(configMap(g, ns, "new")).To(BeNil())
	g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:c001"))
}

// An empty output with prune would delete everything: refused unless spec.allowEmpty says so.
func TestManifestGenerationEmptyOutput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:d001", map[string]string{".flux.yaml": fluxYAML("cat app.yaml"), "staging/app.yaml": appV1})
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))

	publish(t, ns, "repo", "main@sha1:d002", map[string]string{".flux.yaml": fluxYAML("true"), "staging/app.yaml": appV1})
	g.Eventually(readyCondition(key), timeout).Should(Equal("False|BuildFailed|" + build.ErrEmpty.Error()))
	g.Expect(configMap(g, ns, "app")).NotTo(BeNil())

	obj := getGeneration(g, key)
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.AllowEmpty = true
	g.Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:d002"))
	g.Expect(configMap(g, ns, "app")).To(BeNil(), "pruned")
	g.Expect(getGeneration(g, key).Status.Inventory.Entries).To(BeEmpty())
}

// The source may be an OCIRepository: its artifact is read the same way.
func TestManifestGenerationFromOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publishSource(t, generatorv1.OCIRepositoryKind, ns, "manifests", "latest@sha256:0123", map[string]string{"staging/app.yaml": appV1})
	key := createGeneration(t, ns, `
metadata:
  name: apps
spec:
  sourceRef:
    kind: OCIRepository
    name: manifests
  path: ./staging
  interval: 1h
`)
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: latest@sha256:0123"))
	g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "1"))
}

// A patch file entry whose object the generators no longer produce does not block the sync: it
// is ignored with a Warning event naming it, and the other entries apply.
func TestManifestGenerationDropsPatchEntriesOfVanishedObjects(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:f001", map[string]string{
		".flux.yaml":       "version: 1\npatchUpdated:\n  generators:\n    - command: cat app.yaml\n  patchFile: flux-patch.yaml\n",
		"staging/app.yaml": appV1,
		"staging/flux-patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: patched\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: renamed-away\ndata:\n  v: patched\n",
	})
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: main@sha1:f001"))
	g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "patched"))
	g.Expect(configMap(g, ns, "renamed-away")).To(BeNil())
	g.Eventually(func(g Gomega) []string {
		events := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
		var msgs []string
		for _, e := range events.Items {
			if e.Reason == "PatchEntryDropped" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == key.Name {
				msgs = append(msgs, e.Message)
			}
		}
		return msgs
	}, timeout).Should(ConsistOf(And(ContainSubstring("renamed-away"), ContainSubstring("no longer produce"))))
}
