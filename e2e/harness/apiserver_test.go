package harness

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The kube-apiserver stops and starts again on the same etcd, port and certificates: a client
// made before (the admin kubeconfig a controller runs with) is refused while it is down and
// finds everything as it was once it is back.
func TestAPIServerStopsAndStartsAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	s := &System{Env: env, Kubeconfig: dir + "/kubeconfig", stateDir: dir}
	t.Cleanup(func() {
		g.Expect(s.stopAPIServerOnExit()).To(Succeed())
		g.Expect(env.Stop()).To(Succeed())
	})
	g.Expect(env.WriteKubeconfig(s.Kubeconfig)).To(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"a": "b"}}
	g.Expect(c.Create(ctx, cm)).To(Succeed())

	// Stopped gracefully, then killed; the second round stops the process the harness started.
	for _, grace := range []time.Duration{30 * time.Second, 0} {
		g.Expect(s.StopAPIServer(grace)).To(Succeed())
		err = c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		g.Expect(err).To(MatchError(ContainSubstring("connection refused")))

		startCtx, cancel := context.WithTimeout(ctx, time.Minute)
		g.Expect(s.StartAPIServer(startCtx)).To(Succeed())
		cancel()
		got := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
		g.Expect(got.Data).To(Equal(cm.Data))
	}
}
