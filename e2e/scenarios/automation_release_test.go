package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// releasesOf lists the automated ManifestUpdates of a namespace.
func releasesOf(ns string) func(g Gomega) []unstructured.Unstructured {
	return func(g Gomega) []unstructured.Unstructured {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(manifestUpdateGVK.GroupVersion().WithKind("ManifestUpdateList"))
		g.Expect(k8s().List(context.Background(), list, client.InNamespace(ns),
			client.MatchingLabels{"generator.toolkit.fluxcd.io/automated": "true"})).To(Succeed())
		return list.Items
	}
}

// webhookShard is the sharding.fluxcd.io/key of the registry webhook scenario's objects, kept
// by its own manifest-generator.
const webhookShard = "registry-webhook"

const registryWebhookObjects = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
spec:
  interval: 10m
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: apps
  labels:
    sharding.fluxcd.io/key: registry-webhook
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./apps
  interval: 1h
  automation:
    interval: 1h
    insecure: true
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: harbor
spec:
  type: harbor
  secretRef:
    name: receiver-token
  resources:
  - apiVersion: generator.toolkit.fluxcd.io/v1alpha1
    kind: ManifestGeneration
    name: apps
`

// A registry's push webhook, through a Receiver of type harbor naming the ManifestGeneration,
// releases the pushed tag at once: within 2 s, while its manifest-generator lists tags every
// 5 minutes (--registry-poll-interval) and the automation's interval is an hour. The scenario
// runs a manifest-generator of its own with that poll interval, for the objects of its shard.
func TestScenarioRegistryWebhookReleasesAtOnce(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "registry-webhook")
	g := s.g
	dir := t.TempDir()
	shard, err := harness.StartController(binDir, "manifest-generator", sys.Kubeconfig, dir, append(append([]string(nil), controllerArgs...),
		"--registry-poll-interval=5m", "--external-service-allowed-cidrs=127.0.0.1/32",
		"--watch-label-selector="+shardLabel+"="+webhookShard)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = shard.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("manifest-generator of the shard, last lines:\n%s", shard.LogTail(60))
		}
	})
	readyCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(shard.WaitReady(readyCtx)).To(Succeed())

	image := servers.Registry.Host() + "/registry-webhook/app"
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	servers.Registry.PushImage(t, "registry-webhook/app", "1.0.0", created)
	s.gitSecret(s.ns, "git-credentials")
	const token = "3c5e7a9b1d2f4e6a8c0b2d4f6a8c0e2b"
	g.Expect(k8s().Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "receiver-token"},
		StringData: map[string]string{"token": token}})).To(Succeed())
	repo, first := s.newRepo("registry-webhook", map[string]string{
		"apps/app.yaml": strings.NewReplacer("__NS__", s.ns, "__IMAGE__", image).Replace(automatedApp),
	})
	s.create(registryWebhookObjects, "__URL__", repo.HTTPURL())
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "apps", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + first))
	// The first scan has listed the tags: the list is now kept for 5 minutes.
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "apps", "status", "automation", "lastScanTime"), timeout).ShouldNot(BeEmpty())
	g.Eventually(readyOf(receiverGVK, s.ns, "harbor"), timeout).Should(HavePrefix("True|"))
	path := strOf(receiverGVK, s.ns, "harbor", "status", "webhookPath")(g)

	servers.Registry.PushImage(t, "registry-webhook/app", "1.1.0", created.Add(time.Hour))
	g.Consistently(releasesOf(s.ns), 3*time.Second).Should(BeEmpty(), "the tag list is cached: no release without the webhook")

	// Harbor's PUSH_ARTIFACT event, authenticated by the token in Authorization.
	body, _ := json.Marshal(map[string]any{"type": "PUSH_ARTIFACT", "occur_at": time.Now().Unix(), "operator": "ci",
		"event_data": map[string]any{
			"resources":  []map[string]any{{"tag": "1.1.0", "resource_url": image + ":1.1.0"}},
			"repository": map[string]any{"name": "app", "namespace": "registry-webhook", "repo_full_name": "registry-webhook/app"},
		}})
	req, err := http.NewRequest(http.MethodPost, "http://"+webhookReceiverAddr+path, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", token)
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(releasesOf(s.ns), 2*time.Second, 50*time.Millisecond).Should(ConsistOf(
		HaveField("Object", HaveKeyWithValue("spec", HaveKeyWithValue("containerImage", HaveKeyWithValue("image", image+":1.1.0"))))))
	t.Logf("release created %s after the webhook", time.Since(sent).Round(10*time.Millisecond))
	release := releasesOf(s.ns)(g)[0]
	g.Expect(release.GetLabels()).To(HaveKeyWithValue(shardLabel, webhookShard), "kept by the shard's instance")
	settled(g, manifestUpdateGVK, s.ns, release.GetName(), HavePrefix("True|Committed|committed "), nil)
}

const signedReleaseObjects = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
spec:
  interval: 2s
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet-verified
spec:
  interval: 2s
  url: __URL__
  ref:
    branch: master
  secretRef:
    name: git-credentials
  verify:
    mode: HEAD
    secretRef:
      name: release-keys
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: apps
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./apps
  interval: 10m
  automation:
    interval: 2s
    insecure: true
    git:
      author:
        name: Release Bot
        email: release-bot@example.com
      signingKey:
        secretRef:
          name: release-signing-key
`

// A release commit signed with the automation's SSH key passes the verification of a
// GitRepository that trusts that key (spec.verify, mode HEAD): the first commit, unsigned, did
// not.
func TestScenarioSignedReleasePassesGitRepositoryVerify(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "signed-release")
	g := s.g
	key := testserver.NewKeyPair(t, testserver.KeyED25519)
	image := servers.Registry.Host() + "/signed-release/app"
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	servers.Registry.PushImage(t, "signed-release/app", "1.0.0", created)
	s.gitSecret(s.ns, "git-credentials")
	for name, data := range map[string]map[string][]byte{
		"release-signing-key": {"identity": key.PrivateKeyPEM},
		"release-keys":        {"authorized_keys": key.AuthorizedKey()},
	} {
		g.Expect(k8s().Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
			Data: data})).To(Succeed())
	}
	repo, first := s.newRepo("signed-release", map[string]string{
		"apps/app.yaml": strings.NewReplacer("__NS__", s.ns, "__IMAGE__", image).Replace(automatedApp),
	})
	s.create(signedReleaseObjects, "__URL__", repo.HTTPURL())
	g.Eventually(strOf(manifestGenerationGVK, s.ns, "apps", "status", "lastAppliedRevision"), timeout).Should(Equal("master@sha1:" + first))
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "fleet-verified", "SourceVerified"), timeout).Should(Equal(
		"False|InvalidCommitSignature|signature verification of commit '" + first + "' failed: not signed"))

	servers.Registry.PushImage(t, "signed-release/app", "1.1.0", created.Add(time.Hour))
	g.Eventually(releasesOf(s.ns), timeout).Should(HaveLen(1))
	release := releasesOf(s.ns)(g)[0]
	update := settled(g, manifestUpdateGVK, s.ns, release.GetName(), HavePrefix("True|Committed|committed "), nil)
	pushed := str(update, "status", "commit")
	g.Expect(s.git(repo.Dir, "log", "-1", "--format=%an <%ae>", pushed)).To(Equal("Release Bot <release-bot@example.com>"))

	settled(g, gitRepositoryGVK, s.ns, "fleet-verified", HavePrefix("True|Succeeded|stored artifact for revision 'master@sha1:"+pushed+"'"), nil)
	g.Expect(conditionOf(gitRepositoryGVK, s.ns, "fleet-verified", "SourceVerified")(g)).To(HavePrefix(
		"True|Succeeded|verified signature of commit '" + pushed + "' with SSH key "))
}
