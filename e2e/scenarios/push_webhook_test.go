package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

var receiverGVK = schema.GroupVersionKind{Group: "notification.toolkit.fluxcd.io", Version: "v1", Kind: "Receiver"}

// pushChain is a fleet repository on a real Gitea whose pushes reach the gating-controller's
// Receiver, which asks the GitRepository "fleet" (interval 10m) to fetch; the ManifestGeneration
// "by-webhook" applies its ./webhook directory. The GitRepository "fleet-polled" fetches the same
// branch for "by-polling" (./polled), without the Receiver.
type pushChain struct {
	s       *scenario
	repo    *testserver.GiteaRepo
	release int
}

func releaseConfigMap(name string, release int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  release: \"%d\"\n", name, release)
}

func newPushChain(t testing.TB, ns string) *pushChain {
	s := newScenario(t, ns)
	gitea := testserver.NewGitea(t)
	c := &pushChain{s: s, repo: gitea.CreateRepo(t, testserver.GiteaAdmin, "fleet"), release: 1}
	c.repo.Commit(t, "main", "fleet", map[string]string{
		"webhook/cm.yaml": releaseConfigMap("by-webhook", 1),
		"polled/cm.yaml":  releaseConfigMap("by-polling", 1),
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
`, "__URL__", c.repo.HTTPURL())

	s.g.Eventually(c.applied("by-webhook"), timeout).Should(Equal("1"))
	s.g.Eventually(c.applied("by-polling"), timeout).Should(Equal("1"))
	s.g.Eventually(readyOf(receiverGVK, s.ns, "gitea"), timeout).Should(HavePrefix("True|"))
	path := strOf(receiverGVK, s.ns, "gitea", "status", "webhookPath")(s.g)
	s.g.Expect(path).To(HavePrefix("/hook/"))
	c.repo.AddWebhook(t, "http://"+webhookReceiverAddr+path, token, "push")
	return c
}

// applied is the release the ConfigMap of a ManifestGeneration holds, "" before it exists.
func (c *pushChain) applied(name string) func(g Gomega) string {
	return func(g Gomega) string {
		cm := object(g, configMapGVK, c.s.ns, name)
		if cm == nil {
			return ""
		}
		return str(cm, "data", "release")
	}
}

// push commits the next release to both directories and returns when Gitea has it.
func (c *pushChain) push() string {
	c.release++
	c.repo.Commit(c.s.t, "main", fmt.Sprintf("release %d", c.release), map[string]string{
		"webhook/cm.yaml": releaseConfigMap("by-webhook", c.release),
		"polled/cm.yaml":  releaseConfigMap("by-polling", c.release),
	})
	return strconv.Itoa(c.release)
}

// The real chain of a push: Gitea's push webhook reaches the gating-controller's Receiver, which
// asks the GitRepository that fetches the pushed branch to reconcile; it fetches, and the
// ManifestGeneration applies the commit, long before the 10-minute interval. The same push
// without the Receiver waits for the interval. How long the chain takes is
// BenchmarkPushWebhookToApplied's.
func TestScenarioPushWebhookAppliesAtOnce(t *testing.T) {
	t.Parallel()
	c := newPushChain(t, "push-webhook")
	start := time.Now()
	release := c.push()
	c.s.g.Eventually(c.applied("by-webhook"), 30*time.Second, 50*time.Millisecond).Should(Equal(release))
	t.Logf("push to applied through the Receiver: %s", time.Since(start).Round(time.Millisecond))
	c.s.g.Consistently(c.applied("by-polling"), 5*time.Second).Should(Equal("1"))
}

// BenchmarkPushWebhookToApplied measures a push to Gitea until the ManifestGeneration behind the
// Receiver has applied it, through the system's binaries (bin/).
//
//	go test -run '^$' -bench PushWebhookToApplied -benchtime 5x ./scenarios/
func BenchmarkPushWebhookToApplied(b *testing.B) {
	c := newPushChain(b, "push-webhook-bench")
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		release := c.push()
		c.s.g.Eventually(c.applied("by-webhook"), 30*time.Second, 20*time.Millisecond).Should(Equal(release))
		total += time.Since(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-push-to-applied")
}
