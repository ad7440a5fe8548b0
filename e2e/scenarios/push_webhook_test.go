package scenarios

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

var receiverGVK = schema.GroupVersionKind{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Receiver"}

// The real chain of a push: Gitea's push webhook reaches the gating-controller's Receiver, which
// asks the GitRepository that fetches the pushed branch to reconcile; it fetches, and the
// ManifestGeneration applies the commit. The GitRepositories poll every 10 minutes: a second
// one, not behind the Receiver, shows what the same push costs without the webhook.
func TestScenarioPushWebhookAppliesAtOnce(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "push-webhook")
	gitea := testserver.NewGitea(t)
	repo := gitea.CreateRepo(t, testserver.GiteaAdmin, "fleet")
	configMap := func(name, value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  release: \"" + value + "\"\n"
	}
	repo.Commit(t, "main", "fleet", map[string]string{
		"webhook/cm.yaml": configMap("by-webhook", "1"),
		"polled/cm.yaml":  configMap("by-polling", "1"),
	})

	const token = "8d1f0b2c7e4a4f6c9b3e5d7a1c2b4e6f"
	s.g.Expect(k8s().Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "receiver-token"},
		StringData: map[string]string{"token": token},
	})).To(Succeed())
	s.create(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
spec:
  interval: 10m
  url: __URL__
  ref:
    branch: main
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet-polled
spec:
  interval: 10m
  url: __URL__
  ref:
    branch: main
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: by-webhook
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./webhook
  interval: 10m
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: by-polling
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: fleet-polled
  path: ./polled
  interval: 10m
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  name: gitea
spec:
  type: gitea
  events: ["push"]
  secretRef:
    name: receiver-token
  resources:
  - apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    name: fleet
`, "__URL__", repo.HTTPURL())

	release := func(name string) func(g Gomega) string {
		return func(g Gomega) string {
			cm := object(g, configMapGVK, s.ns, name)
			if cm == nil {
				return ""
			}
			return str(cm, "data", "release")
		}
	}
	s.g.Eventually(release("by-webhook"), timeout).Should(Equal("1"))
	s.g.Eventually(release("by-polling"), timeout).Should(Equal("1"))
	s.g.Eventually(readyOf(receiverGVK, s.ns, "gitea"), timeout).Should(HavePrefix("True|"))
	path := strOf(receiverGVK, s.ns, "gitea", "status", "webhookPath")(s.g)
	s.g.Expect(path).To(HavePrefix("/hook/"))
	repo.AddWebhook(t, "http://"+webhookReceiverAddr+path, token, "push")

	start := time.Now()
	repo.Commit(t, "main", "release 2", map[string]string{
		"webhook/cm.yaml": configMap("by-webhook", "2"),
		"polled/cm.yaml":  configMap("by-polling", "2"),
	})
	s.g.Eventually(release("by-webhook"), 10*time.Second, 50*time.Millisecond).Should(Equal("2"))
	elapsed := time.Since(start)
	t.Logf("push to applied through the Receiver: %s", elapsed.Round(time.Millisecond))
	s.g.Expect(elapsed).To(BeNumerically("<", 2*time.Second), "push to applied through the Receiver")

	// Without the webhook the same commit waits for the 10m interval.
	s.g.Consistently(release("by-polling"), 5*time.Second).Should(Equal("1"))
	t.Logf("push to applied without the Receiver: not within %s (the GitRepository's interval is 10m)",
		time.Since(start).Round(time.Second))
}
