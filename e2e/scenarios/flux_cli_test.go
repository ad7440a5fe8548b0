package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// fluxCLI runs the flux CLI of bin/ (`make tools` builds it from Flux's module) against the
// system, as a Flux user does, and fails the scenario when it fails.
func (s *scenario) fluxCLI(args ...string) string {
	s.t.Helper()
	out, err := s.run(filepath.Join(binDir, "flux"), "", args...)
	s.g.Expect(err).NotTo(HaveOccurred(), "flux %s: %s", strings.Join(args, " "), out)
	return out
}

// run runs a command of bin/ with the system's kubeconfig and stdin.
func (s *scenario) run(command, stdin string, args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sys.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const fluxCLISources = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: demo
spec:
  interval: 1m
  url: __GIT__
  secretRef:
    name: git-credentials
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: demo
spec:
  interval: 1m
  path: ./deploy
  prune: true
  targetNamespace: __NS__
  sourceRef:
    kind: GitRepository
    name: demo
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
spec:
  interval: 1m
  url: __HELM__
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: app
spec:
  interval: 1m
  chart: flux-cli-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: charts
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: manifests
spec:
  interval: 1m
  url: oci://__REGISTRY__/flux-cli/manifests
  insecure: true
  ref:
    tag: v1
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: manifests
spec:
  interval: 1m
  bucketName: manifests
  endpoint: __S3__
  insecure: true
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: change-freeze
spec:
  default: closed
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: frozen
  annotations:
    gating.toolkit.fluxcd.io/gates: change-freeze
spec:
  interval: 1m
  url: __GIT__
  secretRef:
    name: git-credentials
`

// The flux CLI, Flux users' everyday tool, against Sluice's source-controller and gating-controller
// with Flux's kustomize-controller: each command prints what it prints against Flux, and a source
// gated by the portable annotation stays gated through `flux export` and a re-apply.
func TestScenarioFluxCLI(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "flux-cli")
	g := s.g
	kustomizeController(t)
	s.gitSecret(s.ns, "git-credentials")
	repo, sha := s.newRepo("flux-cli", map[string]string{"deploy/app.yaml": configMapYAML("from-git", "v1")})
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "flux-cli-app", Version: "1.2.0"})
	servers.Registry.PushArtifact(t, "flux-cli/manifests:v1", map[string]string{"app.yaml": configMapYAML("from-oci", "v1")}, nil)
	s3 := testserver.NewS3(t, testserver.S3Options{})
	s3.Put(t, "manifests", "app.yaml", configMapYAML("from-bucket", "v1"))
	s.create(fluxCLISources, "__GIT__", repo.HTTPURL(), "__NS__", s.ns, "__HELM__", servers.Helm.URL(),
		"__REGISTRY__", servers.Registry.Host(), "__S3__", s3.Endpoint())
	revision := "master@sha1:" + sha
	g.Eventually(readyOf(kustomizationGVK, s.ns, "demo"), timeout).Should(Equal("True|ReconciliationSucceeded|Applied revision: " + revision))
	frozen := "False|GateClosed|Reconciliation is blocked as gate '" + s.ns + "/change-freeze' is closed."
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "frozen"), timeout).Should(Equal(frozen))

	short := "master@sha1:" + sha[:8]
	stored := "stored artifact for revision '" + short + "'"
	out := s.fluxCLI("get", "sources", "git", "-n", s.ns)
	g.Expect(fields(out)).To(ContainElements(
		[]string{"NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"},
		append([]string{"demo", short, "False", "True"}, strings.Fields(stored)...),
	))
	out = s.fluxCLI("get", "sources", "all", "-A")
	g.Expect(fields(out)).To(ContainElement(append([]string{s.ns, "gitrepository/demo", short, "False", "True"}, strings.Fields(stored)...)))
	// Every kind, in every namespace, with Flux's columns and Sluice's Ready messages.
	for _, kind := range []struct{ sub, name, message string }{
		{"helm", "charts", "stored artifact: revision 'sha256:"},
		{"chart", "app", "pulled 'flux-cli-app' chart with version '1.2.0'"},
		{"oci", "manifests", "stored artifact for digest 'v1@sha256:"},
		{"bucket", "manifests", "stored artifact: revision 'sha256:"},
	} {
		g.Eventually(func(g Gomega) string {
			return s.fluxCLI("get", "sources", kind.sub, "-A")
		}, timeout).Should(MatchRegexp(`(?m)^%s\s+%s\s+\S+\s+False\s+True\s+%s`, s.ns, kind.name, regexp.QuoteMeta(kind.message)),
			"flux get sources %s -A", kind.sub)
	}

	out = s.fluxCLI("reconcile", "source", "git", "demo", "-n", s.ns)
	g.Expect(out).To(Equal("► annotating GitRepository demo in " + s.ns + " namespace\n✔ GitRepository annotated\n" +
		"◎ waiting for GitRepository reconciliation\n✔ fetched revision " + revision + "\n"))
	out = s.fluxCLI("reconcile", "kustomization", "demo", "--with-source", "-n", s.ns)
	g.Expect(out).To(HaveSuffix("✔ fetched revision " + revision + "\n► annotating Kustomization demo in " + s.ns + " namespace\n" +
		"✔ Kustomization annotated\n◎ waiting for Kustomization reconciliation\n✔ applied revision " + revision + "\n"))

	out = s.fluxCLI("suspend", "source", "git", "demo", "-n", s.ns)
	g.Expect(out).To(Equal("► suspending source git demo in " + s.ns + " namespace\n✔ source git suspended\n"))
	g.Expect(mustObject(g, gitRepositoryGVK, s.ns, "demo").Object["spec"]).To(HaveKeyWithValue("suspend", true))
	out = s.fluxCLI("resume", "source", "git", "demo", "-n", s.ns)
	g.Expect(out).To(HaveSuffix("✔ source git resumed\n◎ waiting for GitRepository reconciliation\n" +
		"✔ GitRepository demo reconciliation completed\n✔ fetched revision " + revision + "\n"))

	out = s.fluxCLI("events", "--for", "GitRepository/demo", "-n", s.ns)
	g.Expect(fields(out)).To(ContainElement(ContainElements("Normal", "NewArtifact", "GitRepository/demo", "'Initial")))

	out = s.fluxCLI("tree", "kustomization", "demo", "-n", s.ns)
	g.Expect(strings.TrimSpace(out)).To(Equal("Kustomization/" + s.ns + "/demo\n└── ConfigMap/" + s.ns + "/from-git"))

	// flux create ... --export, applied, is Ready.
	made := s.fluxCLI("create", "source", "git", "made", "--url", repo.HTTPURL(), "--branch", "master",
		"--secret-ref", "git-credentials", "--export", "-n", s.ns)
	out, err := s.run(filepath.Join(binDir, "kubectl"), made, "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "made"), timeout).Should(Equal("True|Succeeded|" + "stored artifact for revision '" + revision + "'"))

	// flux export keeps the gates' annotation (Flux's typed API has no spec.gates, which it drops):
	// what it prints re-applies unchanged, and the source re-created from it is gated again.
	exported := s.fluxCLI("export", "source", "git", "--all", "-n", s.ns)
	g.Expect(exported).To(ContainSubstring("gating.toolkit.fluxcd.io/gates: change-freeze"))
	before := mustObject(g, gitRepositoryGVK, s.ns, "demo")
	out, err = s.run(filepath.Join(binDir, "kubectl"), exported, "apply", "--server-side", "--force-conflicts", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	after := mustObject(g, gitRepositoryGVK, s.ns, "demo")
	g.Expect(sameDurations(after.Object["spec"], before.Object["spec"])).To(BeTrue(),
		"the export re-applied the spec unchanged (durations may be written 1m0s for 1m):\n%v\n%v", after.Object["spec"], before.Object["spec"])
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "demo"), timeout).Should(Equal("True|Succeeded|stored artifact for revision '" + revision + "'"))
	frozenYAML := exportedDocument(g, exported, "frozen")
	g.Expect(k8s().Delete(t.Context(), mustObject(g, gitRepositoryGVK, s.ns, "frozen"))).To(Succeed())
	g.Eventually(exists(gitRepositoryGVK, s.ns, "frozen"), timeout).Should(BeFalse())
	out, err = s.run(filepath.Join(binDir, "kubectl"), frozenYAML, "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "frozen"), timeout).Should(Equal(frozen))
	g.Expect(revisionOf(gitRepositoryGVK, s.ns, "frozen")(g)).To(BeEmpty())

	// flux logs looks for Flux's own Deployments (app.kubernetes.io/part-of=flux in flux-system);
	// Sluice's are its own (docs/coming-from-flux.md).
	out, err = s.run(filepath.Join(binDir, "flux"), "", "logs", "-n", s.ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`no Flux pods found in namespace "flux-system"`))
}

// fields is each line of a command's output split into fields.
func fields(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// exportedDocument is the document of a YAML stream that defines the object named name.
func exportedDocument(g Gomega, stream, name string) string {
	for _, doc := range strings.Split(stream, "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err == nil && obj.GetName() == name {
			return doc
		}
	}
	g.Expect(stream).To(ContainSubstring("name: "+name), "no document of %s", name)
	return ""
}

// sameDurations reports whether two specs are equal, a string that parses as a duration being
// equal to another of the same length of time ("1m" and "1m0s").
func sameDurations(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !sameDurations(v, bm[k]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		if !ok {
			return false
		}
		da, errA := time.ParseDuration(a)
		db, errB := time.ParseDuration(bs)
		if errA == nil && errB == nil {
			return da == db
		}
		return a == bs
	default:
		return reflect.DeepEqual(a, b)
	}
}
