package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// The test kubeconfig authenticates with a client certificate for "sluice-admin"; that is what
// SelfSubjectReview reports, hence what requestedBy must say.
func TestSelfSubjectReviewOfTheTestKubeconfigIsSluiceAdmin(t *testing.T) {
	g := NewWithT(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("sluice-admin"))
}

func TestOpenWritesTheRequestAnnotations(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	window := metav1.Duration{Duration: time.Hour}
	createGate(t, ns, "bypass-signoff", gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateClosed, Window: &window})

	res := kubectlGate(t, "open", "bypass-signoff", "Patching a CVE", "--for", "2h", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("gate " + ns + `/bypass-signoff: open requested by sluice-admin for 2h: "Patching a CVE"` + "\n"))
	g.Expect(res.stderr).To(BeEmpty())

	gate := getGate(t, ns, "bypass-signoff")
	requestedAt, err := time.Parse(time.RFC3339, gate.Annotations["open.gate.fluxcd.io/requestedAt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requestedAt).To(BeTemporally("~", time.Now(), 5*time.Second))
	g.Expect(gate.Annotations["open.gate.fluxcd.io/requestedAt"]).To(HaveSuffix("Z"), "UTC")
	g.Expect(gate.Annotations).To(HaveKeyWithValue("open.gate.fluxcd.io/reason", "Patching a CVE"))
	g.Expect(gate.Annotations).To(HaveKeyWithValue("open.gate.fluxcd.io/requestedBy", "sluice-admin"))
	g.Expect(gate.Annotations).To(HaveKeyWithValue("open.gate.fluxcd.io/duration", "2h"))
	// Only the open request is written, and spec is untouched.
	g.Expect(gate.Annotations).NotTo(HaveKey(HavePrefix("close.")))
	g.Expect(gate.Spec.Default).To(Equal(gatingv1alpha1.GateClosed))
	g.Expect(gate.Spec.Window).To(Equal(&window))
}

// A merge patch of the request annotations leaves other annotations alone, and a second open
// without --for or reason drops the first one's duration and reason.
func TestOpenAgainReplacesTheWholeRequest(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	gate := &gatingv1alpha1.Gate{}
	gate.Namespace, gate.Name = ns, "maintenance"
	gate.Annotations = map[string]string{"team": "platform"}
	g.Expect(env.Client.Create(context.Background(), gate)).To(Succeed())

	g.Expect(kubectlGate(t, "open", "maintenance", "first", "--for", "30m", "-n", ns).exitCode).To(Equal(0))
	first := getGate(t, ns, "maintenance").Annotations["open.gate.fluxcd.io/requestedAt"]
	time.Sleep(1100 * time.Millisecond) // requestedAt has a resolution of one second

	res := kubectlGate(t, "open", "maintenance", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("gate " + ns + "/maintenance: open requested by sluice-admin\n"))
	annotations := getGate(t, ns, "maintenance").Annotations
	g.Expect(annotations).To(HaveKeyWithValue("team", "platform"))
	g.Expect(annotations["open.gate.fluxcd.io/requestedAt"]).NotTo(Equal(first))
	g.Expect(annotations).NotTo(HaveKey("open.gate.fluxcd.io/reason"))
	g.Expect(annotations).NotTo(HaveKey("open.gate.fluxcd.io/duration"))
}

func TestCloseWithoutReasonRemovesThePreviousReason(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})

	g.Expect(kubectlGate(t, "close", "freeze", "Release freeze", "--for", "1h", "-n", ns).exitCode).To(Equal(0))
	annotations := getGate(t, ns, "freeze").Annotations
	g.Expect(annotations).To(HaveKeyWithValue("close.gate.fluxcd.io/reason", "Release freeze"))
	g.Expect(annotations).To(HaveKeyWithValue("close.gate.fluxcd.io/duration", "1h"))

	res := kubectlGate(t, "close", "freeze", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("gate " + ns + "/freeze: close requested by sluice-admin\n"))
	annotations = getGate(t, ns, "freeze").Annotations
	g.Expect(annotations).NotTo(HaveKey("close.gate.fluxcd.io/reason"))
	g.Expect(annotations).NotTo(HaveKey("close.gate.fluxcd.io/duration"))
	g.Expect(annotations).To(HaveKeyWithValue("close.gate.fluxcd.io/requestedBy", "sluice-admin"))
	_, err := time.Parse(time.RFC3339, annotations["close.gate.fluxcd.io/requestedAt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotations).NotTo(HaveKey(HavePrefix("open.")))
}

// requestedBy is who the API server says made the request, so --as is honoured.
func TestRequestedByIsTheImpersonatedUser(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})

	res := kubectlGate(t, "open", "freeze", "--as", "alice", "--as-group", "system:masters", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring("open requested by alice"))
	g.Expect(getGate(t, ns, "freeze").Annotations).To(HaveKeyWithValue("open.gate.fluxcd.io/requestedBy", "alice"))
}

func TestOpenMissingGateNamesGateAndNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)

	res := kubectlGate(t, "open", "nope", "why not", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring(`gate "nope" not found in namespace "` + ns + `"`))
	g.Expect(res.stdout).To(BeEmpty())
}

func TestRequestRejectsABadForValue(t *testing.T) {
	ns := env.Namespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})

	for _, verb := range []string{"open", "close"} {
		for _, value := range []string{"soon", "0s", "-1h"} {
			t.Run(verb+" --for "+value, func(t *testing.T) {
				g := NewWithT(t)
				res := kubectlGate(t, verb, "freeze", "--for", value, "-n", ns)
				g.Expect(res.exitCode).NotTo(Equal(0))
				g.Expect(res.stderr).To(ContainSubstring(`invalid --for "` + value + `"`))
				// Nothing was requested.
				g.Expect(getGate(t, ns, "freeze").Annotations).To(BeEmpty())
			})
		}
	}
}

func TestRequestRejectsAnUnquotedReason(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createGate(t, ns, "freeze", gatingv1alpha1.GateSpec{})

	res := kubectlGate(t, "open", "freeze", "Patching", "a", "CVE", "-n", ns)
	g.Expect(res.exitCode).NotTo(Equal(0))
	g.Expect(res.stderr).To(ContainSubstring("quote a reason that has spaces"))
	g.Expect(getGate(t, ns, "freeze").Annotations).To(BeEmpty())
}
