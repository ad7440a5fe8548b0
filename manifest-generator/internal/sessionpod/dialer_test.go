package sessionpod

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

func testDialer(t *testing.T) *Dialer {
	t.Helper()
	opts := DefaultOptions()
	opts.Enabled, opts.Image, opts.StartTimeout = true, "sluice.local/manifest-generator:dev", 2*time.Second
	d, err := New(context.Background(), env.Config, opts, "", "", "manager")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sessionPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: SessionLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// A session pod is admitted where the namespace enforces the restricted Pod Security level, has
// the bounds the flags give, and is deleted when it does not run in time, with an error that
// names the flag.
func TestSessionPodIsRestrictedBoundedAndDeleted(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	nsObj, err := clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	_, err = clientset.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	d := testDialer(t)
	owner := runner.Owner{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Namespace: ns, Name: "app", UID: "0c5f3d4e-1111-2222-3333-444455556666"}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := d.Dial(dctx, runner.Options{Owner: owner})
		errc <- err
	}()
	var pod corev1.Pod
	g.Eventually(func() int {
		pods := sessionPods(t, ns)
		if len(pods) == 1 {
			pod = pods[0]
		}
		return len(pods)
	}, 5*time.Second, 20*time.Millisecond).Should(Equal(1))

	g.Expect(pod.Name).To(HavePrefix("app-generate-"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(OwnerNameLabel, "app"))
	g.Expect(pod.OwnerReferences).To(HaveLen(1))
	g.Expect(pod.OwnerReferences[0].Kind).To(Equal("ManifestGeneration"))
	spec := pod.Spec
	g.Expect(*spec.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(*spec.EnableServiceLinks).To(BeFalse())
	g.Expect(spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	// Bounded by the session's deadline (5 minutes here), not the flag's 30.
	g.Expect(*spec.ActiveDeadlineSeconds).To(BeNumerically("<=", 301))
	g.Expect(*spec.SecurityContext.RunAsUser).To(BeNumerically(">=", firstUser))
	c := spec.Containers[0]
	// The pod's own process waits; the session process is an exec (not in the pod's spec), so its
	// output never reaches the node's container logs.
	g.Expect(c.Args).To(Equal([]string{"runner", "pause"}))
	g.Expect(c.Stdin || c.TTY).To(BeFalse())
	cmd := d.Options.sessionCommand()
	g.Expect(cmd[:5]).To(Equal([]string{"/proc/1/exe", "runner", "session", "--workdir", "/work"}))
	g.Expect(cmd).To(ContainElement("--max-session-disk=1073741824"))
	g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	// Memory is --session-memory plus --session-disk: the files are in memory.
	g.Expect(c.Resources.Limits.Memory().Equal(resource.MustParse("2Gi"))).To(BeTrue(), "memory limit %s", c.Resources.Limits.Memory())
	g.Expect(c.Resources.Limits.Cpu().Equal(resource.MustParse("1"))).To(BeTrue())
	g.Expect(spec.Volumes[0].EmptyDir.Medium).To(Equal(corev1.StorageMediumMemory))
	g.Expect(spec.Volumes[0].EmptyDir.SizeLimit.Equal(resource.MustParse("1Gi"))).To(BeTrue())

	// No node runs it here: the start timeout fails the session and deletes the pod.
	var dialErr error
	g.Eventually(errc, 10*time.Second).Should(Receive(&dialErr))
	g.Expect(dialErr).To(MatchError(ContainSubstring("did not run within 2s (--session-start-timeout)")))
	g.Expect(sessionPods(t, ns)).To(BeEmpty())
}

// A namespace whose ResourceQuota is used up refuses the session's pod: the session fails with
// the quota's message, which tells the tenant what to change.
func TestSessionPodRefusedByQuota(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	_, err := clientset.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	d := testDialer(t)
	// The quota controller is not running: the quota's usage is set by hand, as it would do.
	g.Eventually(func() error {
		q, err := clientset.CoreV1().ResourceQuotas(ns).Get(ctx, "no-pods", metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		_, err = clientset.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{})
		return err
	}, 10*time.Second).Should(Succeed())
	var dialErr error
	g.Eventually(func() string {
		_, dialErr = d.Dial(ctx, runner.Options{Owner: runner.Owner{Kind: "ManifestUpdate", Namespace: ns, Name: "bump"}})
		if dialErr == nil {
			return ""
		}
		return dialErr.Error()
	}, 10*time.Second, 100*time.Millisecond).Should(ContainSubstring("exceeded quota"))
	g.Expect(dialErr.Error()).To(HavePrefix("creating the session pod in namespace " + ns))
	g.Expect(sessionPods(t, ns)).To(BeEmpty())
}

// Sweep deletes the session pods it did not start (a dead controller's), never its own.
func TestSweepDeletesOnlyPodsLeftBehind(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	d := testDialer(t)
	mk := func(name string) {
		t.Helper()
		_, err := clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{SessionLabel: "true"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName, Image: "x"}}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	mk("left-behind")
	mk("live")
	d.live.Store(ns+"/live", true)
	g.Expect(d.Sweep(ctx)).To(Succeed())
	names := []string{}
	for _, p := range sessionPods(t, ns) {
		names = append(names, p.Name)
	}
	g.Expect(names).To(Equal([]string{"live"}))
}
