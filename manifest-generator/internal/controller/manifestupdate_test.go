package controller

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// updateFixture is a Git server with a repository, and a namespace with its GitRepository
// (spec only: no source-controller runs here), the basic-auth Secret and a ManifestGeneration
// of path ./apps.
type updateFixture struct {
	ns   string
	repo *testserver.Repo
	base string
}

// nsPlaceholder in fixture files is replaced by the fixture's namespace.
const nsPlaceholder = "__NS__"

func newUpdateFixture(t *testing.T, files map[string]string) *updateFixture {
	t.Helper()
	testserver.RequireGit(t)
	srv := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := srv.NewRepo(t, "fleet")
	ns := tenantNamespace(t)
	withNS := make(map[string]string, len(files))
	for name, content := range files {
		withNS[name] = strings.ReplaceAll(content, nsPlaceholder, ns)
	}
	base := repo.Commit(t, "Initial commit", withNS)
	createFleet(t, ns, repo.HTTPURL(), "master", "bob", "s3cret")
	createGeneration(t, ns, `
metadata:
  name: apps
spec:
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./apps
  interval: 1h
`)
	return &updateFixture{ns: ns, repo: repo, base: base}
}

// createFleet creates the GitRepository "fleet" of url and branch (spec only) with its basic-auth
// Secret "git-auth".
func createFleet(t *testing.T, ns, url, branch, username, password string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"},
		Data: map[string][]byte{"username": []byte(username), "password": []byte(password)}})).To(Succeed())
	src := newSource(generatorv1.GitRepositoryKind)
	src.SetNamespace(ns)
	src.SetName("fleet")
	g.Expect(unstructured.SetNestedField(src.Object, map[string]any{
		"url": url, "interval": "1h", "ref": map[string]any{"branch": branch},
		"secretRef": map[string]any{"name": "git-auth"},
	}, "spec")).To(Succeed())
	g.Expect(k8s.Create(ctx, src)).To(Succeed())
}

func (f *updateFixture) createUpdate(t *testing.T, manifest string) client.ObjectKey {
	t.Helper()
	obj := &generatorv1.ManifestUpdate{}
	NewWithT(t).Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(manifest, nsPlaceholder, f.ns)), obj)).To(Succeed())
	obj.Namespace = f.ns
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

func getUpdate(g Gomega, key client.ObjectKey) *generatorv1.ManifestUpdate {
	obj := &generatorv1.ManifestUpdate{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

// updateReady is "status|reason|message" of Ready once the reconcile of the current spec is over
// (Ready is not Unknown).
func updateReady(key client.ObjectKey) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getUpdate(g, key)
		c := conditions.Get(obj, meta.ReadyCondition)
		if c == nil || c.ObservedGeneration != obj.Generation || c.Status == metav1.ConditionUnknown {
			return "not observed yet"
		}
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
}

// git runs git in dir (the server's bare repository) and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testserver.GitEnv()
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// head is the commit of master on the server.
func (f *updateFixture) head(t *testing.T) string {
	return git(t, f.repo.Dir, "rev-parse", "refs/heads/master")
}

// fileAtHead is a file of master on the server.
func (f *updateFixture) fileAtHead(t *testing.T, path string) string {
	return git(t, f.repo.Dir, "show", "refs/heads/master:"+path)
}

// changedFiles are the files the head commit of master changed.
func (f *updateFixture) changedFiles(t *testing.T) []string {
	return strings.Fields(git(t, f.repo.Dir, "diff-tree", "--no-commit-id", "--name-only", "-r", "refs/heads/master"))
}

// publishHead publishes the tree of master on the server as the GitRepository's artifact, as
// the source-controller would after fetching it.
func (f *updateFixture) publishHead(t *testing.T) {
	t.Helper()
	files := map[string]string{}
	for _, name := range strings.Fields(git(t, f.repo.Dir, "ls-tree", "-r", "--name-only", "refs/heads/master")) {
		files[name] = f.fileAtHead(t, name) + "\n"
	}
	publish(t, f.ns, "fleet", "master@sha1:"+f.head(t), files)
}

func (f *updateFixture) commitCount(t *testing.T) string {
	return git(t, f.repo.Dir, "rev-list", "--count", "refs/heads/master")
}

const podinfoDeployment = `# podinfo, the demo app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: default
  annotations:
    fluxcd.io/locked: "true" # locked for the release
spec:
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
        - name: app # the app itself
          image: ghcr.io/stefanprodan/podinfo:6.0.0
        - name: sidecar
          image: busybox:1.36
`

const podinfoService = `apiVersion: v1
kind: Service
metadata:
  name: podinfo
  namespace: default
spec:
  ports:
    - port: 80
`

const imageUpdate = `
metadata:
  name: podinfo-6-1
spec:
  generationRef:
    name: apps
  workload: default:deployment/podinfo
  containerImage:
    container: app
    image: ghcr.io/stefanprodan/podinfo:6.1.0
`

// Raw mode: the file of the workload is edited in place (comments kept), one commit is pushed,
// the status names it, and the GitRepository is asked to fetch it. The update is done once.
func TestManifestUpdateRawImage(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment, "apps/service.yaml": podinfoService})
	key := f.createUpdate(t, imageUpdate)

	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|committed "))
	head := f.head(t)
	g.Expect(head).NotTo(Equal(f.base))
	g.Expect(git(t, f.repo.Dir, "rev-parse", "refs/heads/master~1")).To(Equal(f.base))
	obj := getUpdate(g, key)
	g.Expect(obj.Status.Commit).To(Equal(head))
	g.Expect(conditions.Get(obj, meta.ReadyCondition).Message).To(Equal("committed " + head + " to master"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/podinfo.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/podinfo.yaml") + "\n").To(Equal(strings.Replace(podinfoDeployment,
		"podinfo:6.0.0", "podinfo:6.1.0", 1)))
	g.Expect(git(t, f.repo.Dir, "log", "-1", "--format=%an <%ae>|%s", "refs/heads/master")).To(Equal(
		"Sluice <sluice@localhost>|Update default:deployment/podinfo container app to ghcr.io/stefanprodan/podinfo:6.1.0"))

	src := newSource(generatorv1.GitRepositoryKind)
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "fleet"}, src)).To(Succeed())
	g.Expect(src.GetAnnotations()).To(HaveKey(meta.ReconcileRequestAnnotation))

	// Done once: a reconcile request does not push again.
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "again"}
	g.Expect(k8s.Update(context.Background(), obj)).To(Succeed())
	g.Consistently(func() string { return f.head(t) }, 2*time.Second).Should(Equal(head))
}

// Raw mode policies: set one, remove another, in one commit; comments stay.
func TestManifestUpdateRawPolicies(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment, "apps/service.yaml": podinfoService})
	key := f.createUpdate(t, `
metadata:
  name: podinfo-policies
spec:
  generationRef:
    name: apps
  workload: default:deployment/podinfo
  policies:
    - name: automated
      value: "true"
    - name: locked
  git:
    messageTemplate: "Policies of {{ .Spec.Workload }} by {{ .Name }}"
`)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/podinfo.yaml"}))
	file := f.fileAtHead(t, "apps/podinfo.yaml")
	g.Expect(file).To(ContainSubstring(`fluxcd.io/automated: "true"`))
	g.Expect(file).NotTo(ContainSubstring("fluxcd.io/locked"))
	g.Expect(file).To(ContainSubstring("# podinfo, the demo app"))
	g.Expect(file).To(ContainSubstring("- name: app # the app itself"))
	g.Expect(git(t, f.repo.Dir, "log", "-1", "--format=%s", "refs/heads/master")).To(Equal("Policies of default:deployment/podinfo by podinfo-policies"))

	// The same request again changes nothing: NoChange, no commit.
	key2 := f.createUpdate(t, `
metadata:
  name: podinfo-policies-again
spec:
  generationRef:
    name: apps
  workload: default:deployment/podinfo
  policies:
    - name: automated
      value: "true"
`)
	g.Eventually(updateReady(key2), timeout).Should(HavePrefix("True|NoChange|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(getUpdate(g, key2).Status.Commit).To(BeEmpty())
}

const kustomizeFiles = `resources:
  - podinfo.yaml
  - service.yaml
`

// patchUpdated: the generators run (real kustomize) and the change lands in the patch file,
// created by the first update and updated by the next.
func TestManifestUpdatePatchFile(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{
		"apps/.flux.yaml": `version: 1
patchUpdated:
  generators:
    - command: kustomize build .
  patchFile: flux-patch.yaml
`,
		"apps/kustomization.yaml": kustomizeFiles, "apps/podinfo.yaml": podinfoDeployment, "apps/service.yaml": podinfoService,
	})
	key := f.createUpdate(t, imageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/flux-patch.yaml")).To(ContainSubstring("ghcr.io/stefanprodan/podinfo:6.1.0"))
	g.Expect(getUpdate(g, key).Status.Commit).To(Equal(f.head(t)))

	key2 := f.createUpdate(t, `
metadata:
  name: podinfo-automated
spec:
  generationRef:
    name: apps
  workload: default:deployment/podinfo
  policies:
    - name: automated
      value: "true"
`)
	g.Eventually(updateReady(key2), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("3"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/flux-patch.yaml"}))
	patchFile := f.fileAtHead(t, "apps/flux-patch.yaml")
	g.Expect(patchFile).To(ContainSubstring("ghcr.io/stefanprodan/podinfo:6.1.0"))
	g.Expect(patchFile).To(ContainSubstring("fluxcd.io/automated"))
}

func commandUpdatedFiles(updater string) map[string]string {
	return map[string]string{
		"apps/.flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: cat podinfo.yaml service.yaml
  updaters:
    - containerImage:
        command: sh ./update.sh
`,
		"apps/update.sh": updater, "apps/podinfo.yaml": podinfoDeployment, "apps/service.yaml": "---\n" + podinfoService,
	}
}

// commandUpdated: the updater (a sed script in the repository) makes the change.
func TestManifestUpdateCommandUpdated(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, commandUpdatedFiles(`#!/bin/sh
set -e
sed -i "s|image: ghcr.io/stefanprodan/podinfo:.*|image: $FLUX_IMG:$FLUX_TAG|" podinfo.yaml
`))
	key := f.createUpdate(t, imageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.commitCount(t)).To(Equal("2"))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/podinfo.yaml"}))
	g.Expect(f.fileAtHead(t, "apps/podinfo.yaml")).To(ContainSubstring("image: ghcr.io/stefanprodan/podinfo:6.1.0"))
	g.Expect(getUpdate(g, key).Status.Commit).To(Equal(f.head(t)))
}

// An updater that changes the wrong container fails verification: nothing is pushed, and the
// update is stalled.
func TestManifestUpdateVerificationFailed(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, commandUpdatedFiles(`#!/bin/sh
set -e
sed -i "s|image: busybox:.*|image: $FLUX_IMG:$FLUX_TAG|" podinfo.yaml
`))
	key := f.createUpdate(t, imageUpdate)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("False|VerificationFailed|"))
	t.Log(updateReady(key)(g))
	g.Expect(updateReady(key)(g)).To(ContainSubstring("default:deployment/podinfo changed in other ways than requested (spec.template.spec.containers[0].image; spec.template.spec.containers[1].image)"))
	g.Expect(conditions.IsStalled(getUpdate(g, key))).To(BeTrue())
	g.Expect(f.head(t)).To(Equal(f.base))
}

// A workload that does not exist is a terminal failure naming it; nothing is pushed.
func TestManifestUpdateMissingWorkload(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	key := f.createUpdate(t, strings.Replace(imageUpdate, "deployment/podinfo", "deployment/missing", 1))
	g.Eventually(updateReady(key), timeout).Should(ContainSubstring("workload default:deployment/missing does not exist"))
	t.Log(updateReady(key)(g))
	g.Expect(updateReady(key)(g)).To(HavePrefix("False|"))
	g.Expect(conditions.IsStalled(getUpdate(g, key))).To(BeTrue())
	g.Expect(f.head(t)).To(Equal(f.base))
}

// A push the server's hook declines is PushFailed (retried), with the server's message and no
// credentials.
func TestManifestUpdatePushRejected(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	g.Expect(os.WriteFile(filepath.Join(f.repo.Dir, "hooks", "pre-receive"),
		[]byte("#!/bin/sh\necho \"branch master is protected\" >&2\nexit 1\n"), 0o755)).To(Succeed())
	key := f.createUpdate(t, imageUpdate)
	// The push is retried, Ready going Unknown in between: keep the message that was seen.
	var msg string
	g.Eventually(func(g Gomega) string { msg = updateReady(key)(g); return msg }, timeout).Should(HavePrefix("False|PushFailed|"))
	t.Log(msg)
	g.Expect(msg).To(ContainSubstring("branch master is protected"))
	g.Expect(msg).NotTo(ContainSubstring("s3cret"))
	obj := getUpdate(g, key)
	g.Expect(conditions.IsStalled(obj)).To(BeFalse())
	g.Expect(conditions.IsReconciling(obj)).To(BeTrue())
	g.Expect(f.head(t)).To(Equal(f.base))
}

// Closed gates hold the change: Blocked, nothing pushed; opening them lets it through.
func TestManifestUpdateGateClosed(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	gatestest.SetOpened(t, k8s, f.ns, "freeze", false)
	key := f.createUpdate(t, imageUpdate+`  gates:
    refs: [freeze]
`)
	g.Eventually(func(g Gomega) bool {
		return conditions.IsTrue(getUpdate(g, key), gatesapi.BlockedCondition)
	}, timeout).Should(BeTrue())
	g.Expect(conditions.GetReason(getUpdate(g, key), meta.ReadyCondition)).To(Equal("GateClosed"))
	g.Consistently(func() string { return f.head(t) }, 2*time.Second).Should(Equal(f.base))

	gatestest.SetOpened(t, k8s, f.ns, "freeze", true)
	g.Eventually(updateReady(key), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.head(t)).NotTo(Equal(f.base))
}
