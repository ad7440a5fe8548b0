package harness

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The kube-controller-manager answers /healthz, finishes the deletion of a namespace (its
// objects, then the namespace itself) and stops cleanly on SIGTERM.
func TestControllerManagerFinishesNamespaceDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	dir := t.TempDir()
	kubeconfig := dir + "/kubeconfig"
	g.Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())

	kcm, err := StartControllerManager(env.Environment.BinaryAssetsDirectory, kubeconfig, dir)
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = kcm.Kill()
		}
	})
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	g.Expect(kcm.WaitReady(readyCtx)).To(Succeed(), kcm.LogTail(20))
	g.Expect(kcm.Args()).To(ContainElement("--controllers=namespace-controller,garbage-collector-controller"))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "inside"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	}, time.Minute).Should(Satisfy(apierrors.IsNotFound), "the namespace is gone, not Terminating:\n%s", kcm.LogTail(20))

	stopped = true
	g.Expect(kcm.Stop(30*time.Second)).To(Succeed(), kcm.LogTail(20))
}
