package fluxreceiver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/testenv"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// conditionOf is "status|reason|message" of a condition of the Receiver, "" when absent.
func conditionOf(ns, name, typ string) func(g Gomega) string {
	return func(g Gomega) string {
		if c := conditions.Get(getReceiver(g, ns, name), typ); c != nil {
			return string(c.Status) + "|" + c.Reason + "|" + c.Message
		}
		return ""
	}
}

// The webhook path is Flux's, /hook/<sha256(token+name+namespace)>: for the token s3cr3t, the
// Receiver github-receiver of flux-system is at the path Flux gives it. Rotating the token moves
// the Receiver: the old path is refused at once, the new one is served after the next reconcile.
func TestReceiverWebhookPath(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}
	g.Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	newGitRepository(t, "flux-system", "flux-system", "https://git.example.com/fleet", nil)
	path := newReceiver(t, "flux-system", "github-receiver", "generic", "s3cr3t",
		[]notificationv1.ReceiverResource{resource("GitRepository", "flux-system")}, nil)
	g.Expect(path).To(Equal("/hook/605dbd4976c3504a20afec155a68122702621389b3b29f71feb118008a1696a1"))
	g.Expect(conditionOf("flux-system", "github-receiver", meta.ReadyCondition)(g)).
		To(Equal("True|Succeeded|Receiver initialized for path: " + path))
	g.Expect(getReceiver(g, "flux-system", "github-receiver").Status.ObservedGeneration).To(BeEquivalentTo(1))

	secret := &corev1.Secret{}
	g.Expect(k8s.Get(ctx(), types.NamespacedName{Namespace: "flux-system", Name: "github-receiver-token"}, secret)).To(Succeed())
	secret.Data[notificationv1.TokenKey] = []byte("rotated")
	g.Expect(k8s.Update(ctx(), secret)).To(Succeed())
	code, msg := post(t, path, []byte(`{}`), nil)
	g.Expect(code).To(Equal(404))
	g.Expect(msg).To(Equal("no receiver at this path"))
	g.Expect(requestedAt(gitRepositoryGVK, "flux-system", "flux-system")(g)).To(BeEmpty())

	r := getReceiver(g, "flux-system", "github-receiver")
	r.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "rotated"}
	g.Expect(k8s.Update(ctx(), r)).To(Succeed())
	newPath := "/hook/" + sha256Hex("rotated"+"github-receiver"+"flux-system")
	g.Eventually(func(g Gomega) string { return getReceiver(g, "flux-system", "github-receiver").Status.WebhookPath }, 10*time.Second).
		Should(Equal(newPath))
	g.Expect(getReceiver(g, "flux-system", "github-receiver").Status.LastHandledReconcileAt).To(Equal("rotated"))
	g.Eventually(func() int { code, _ := post(t, newPath, []byte(`{}`), nil); return code }, 10*time.Second).Should(Equal(200))
	g.Expect(requestedAt(gitRepositoryGVK, "flux-system", "flux-system")(g)).NotTo(BeEmpty())
}

// A Receiver whose Secret, or the Secret's token, is missing is not Ready, says what to fix and
// has no path; it becomes Ready once the Secret is there.
func TestReceiverWithoutSecret(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	r := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lonely"},
		Spec: notificationv1.ReceiverSpec{Type: "github", SecretRef: &meta.LocalObjectReference{Name: "webhook-token"},
			Resources: []notificationv1.ReceiverResource{resource("GitRepository", "app")}},
	}
	g.Expect(k8s.Create(ctx(), r)).To(Succeed())
	g.Eventually(conditionOf(ns, "lonely", meta.ReadyCondition), 10*time.Second).Should(Equal(
		"False|TokenNotFound|Secret '" + ns + "/webhook-token' not found: create it with the webhook's secret token under 'token'"))
	g.Expect(getReceiver(g, ns, "lonely").Status.WebhookPath).To(BeEmpty())

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-token"},
		Data: map[string][]byte{"password": []byte("x")}}
	g.Expect(k8s.Create(ctx(), secret)).To(Succeed())
	g.Eventually(conditionOf(ns, "lonely", meta.ReadyCondition), 10*time.Second).Should(Equal(
		"False|TokenNotFound|Secret '" + ns + "/webhook-token' has no 'token' key: add the webhook's secret token under 'token'"))

	secret.Data = map[string][]byte{notificationv1.TokenKey: []byte("finally")}
	g.Expect(k8s.Update(ctx(), secret)).To(Succeed())
	g.Eventually(conditionOf(ns, "lonely", meta.ReadyCondition), 10*time.Second).Should(HavePrefix("True|Succeeded|"))
	g.Expect(getReceiver(g, ns, "lonely").Status.WebhookPath).To(Equal("/hook/" + sha256Hex("finally"+"lonely"+ns)))
	// Each change of state is an event, once; the path is not in them.
	g.Eventually(testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: "lonely"}, notificationv1.ReceiverKind), 10*time.Second).
		Should(ConsistOf(
			"Warning TokenNotFound: Secret '"+ns+"/webhook-token' not found: create it with the webhook's secret token under 'token'",
			"Warning TokenNotFound: Secret '"+ns+"/webhook-token' has no 'token' key: add the webhook's secret token under 'token'",
			"Normal Succeeded: Receiver initialized for a new webhook path (.status.webhookPath)"))
}

// A Receiver that names an object of another namespace stalls, saying why, when cross-namespace
// references are not allowed (the default): it gets no path and nothing is asked there.
func TestReceiverRefusesCrossNamespaceRefs(t *testing.T) {
	g := NewWithT(t)
	ns, other := env.Namespace(t), env.Namespace(t)
	newGitRepository(t, other, "victim", "https://git.example.com/team/victim", nil)
	g.Expect(k8s.Create(ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"},
		Data: map[string][]byte{notificationv1.TokenKey: []byte("tenant-token")}})).To(Succeed())
	victim := resource("GitRepository", "victim")
	victim.Namespace = other
	g.Expect(k8s.Create(ctx(), &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reach"},
		Spec: notificationv1.ReceiverSpec{Type: "generic", SecretRef: &meta.LocalObjectReference{Name: "token"},
			Resources: []notificationv1.ReceiverResource{victim}},
	})).To(Succeed())

	want := "spec.resources[0]: GitRepository/victim is in namespace '" + other + "': a Receiver may only ask objects of its own " +
		"namespace (the gating-controller runs without --webhook-receiver-allow-cross-namespace-refs)"
	g.Eventually(conditionOf(ns, "reach", meta.StalledCondition), 10*time.Second).Should(Equal("True|ValidationFailed|" + want))
	g.Expect(conditionOf(ns, "reach", meta.ReadyCondition)(g)).To(Equal("False|ValidationFailed|" + want))
	g.Expect(getReceiver(g, ns, "reach").Status.WebhookPath).To(BeEmpty())
	code, _ := post(t, "/hook/"+sha256Hex("tenant-token"+"reach"+ns), []byte(`{}`), nil)
	g.Expect(code).To(Equal(404))
	g.Consistently(requestedAt(gitRepositoryGVK, other, "victim"), time.Second).Should(BeEmpty())
}

// The types Sluice does not implement, and a filter that does not compile, stall the Receiver
// with a message that says what to do.
func TestReceiverStallsOnWhatItCannotServe(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(k8s.Create(ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"},
		Data: map[string][]byte{notificationv1.TokenKey: []byte("t")}})).To(Succeed())
	for name, spec := range map[string]notificationv1.ReceiverSpec{
		"gcr":      {Type: "gcr"},
		"cdevents": {Type: "cdevents"},
		"bad-cel":  {Type: "generic", ResourceFilter: "res.metadata.name ==="},
		"not-bool": {Type: "generic", ResourceFilter: "res.metadata.name"},
	} {
		spec.SecretRef = &meta.LocalObjectReference{Name: "token"}
		spec.Resources = []notificationv1.ReceiverResource{resource("GitRepository", "app")}
		g.Expect(k8s.Create(ctx(), &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
	}
	g.Eventually(conditionOf(ns, "gcr", meta.StalledCondition), 10*time.Second).Should(Equal(
		"True|ValidationFailed|type 'gcr' is not implemented by Sluice's receiver: use one of acr, bitbucket, dockerhub, " +
			"generic, generic-hmac, gitea, github, gitlab, harbor, nexus, quay (docs/flux-receiver.md)"))
	g.Eventually(conditionOf(ns, "cdevents", meta.StalledCondition), 10*time.Second).Should(HavePrefix("True|ValidationFailed|type 'cdevents' is not implemented"))
	g.Eventually(conditionOf(ns, "bad-cel", meta.StalledCondition), 10*time.Second).Should(HavePrefix(
		"True|InvalidCELExpression|spec.resourceFilter: the CEL expression 'res.metadata.name ===' does not compile"))
	g.Eventually(conditionOf(ns, "not-bool", meta.StalledCondition), 10*time.Second).Should(HavePrefix(
		"True|InvalidCELExpression|spec.resourceFilter: the CEL expression 'res.metadata.name' returns"))
	g.Eventually(testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: "gcr"}, notificationv1.ReceiverKind), 10*time.Second).
		Should(ContainElement(HavePrefix("Warning ValidationFailed: type 'gcr' is not implemented")))
}

// A request with a bad signature leaves the token, the signatures and the body out of the logs
// and the events: the logs say that a request was refused, and why, and nothing the caller sent
// but its address and the event's name.
func TestReceiverLogsNoSecrets(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "tok-6b1f9d0c2e4a-never-logged"
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	path := newReceiver(t, ns, "quiet", "github", token, []notificationv1.ReceiverResource{resource("GitRepository", "app")}, nil)

	body := []byte(`{"ref":"refs/heads/main","marker":"body-3f1e77-never-logged"}`)
	badSig := mac(sha256Hash, "guessed-key", body)
	goodSig := mac(sha256Hash, token, body)
	code, _ := post(t, path, body, map[string]string{"X-Hub-Signature-256": "sha256=" + badSig, "X-GitHub-Event": "push",
		"X-Hub-Signature": "sha1=" + mac(sha1Hash, token, body)})
	g.Expect(code).To(Equal(401))
	code, _ = post(t, path, body, map[string]string{"X-Hub-Signature-256": "sha256=" + goodSig, "X-GitHub-Event": "push"})
	g.Expect(code).To(Equal(200))

	g.Eventually(func() string { return strings.Join(logs.Lines(), "\n") }, 5*time.Second).
		Should(ContainSubstring(`"msg":"request refused: bad token or signature"`))
	all := strings.Join(logs.Lines(), "\n")
	var events []string
	for _, name := range []string{"quiet"} {
		events = append(events, testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: name}, "")(g)...)
	}
	all += strings.Join(events, "\n")
	for _, secret := range []string{token, badSig, goodSig, mac(sha1Hash, token, body), "body-3f1e77-never-logged", path[len("/hook/"):]} {
		g.Expect(all).NotTo(ContainSubstring(secret))
	}
	var refused string
	for _, line := range logs.Lines() {
		if strings.Contains(line, "request refused: bad token or signature") && strings.Contains(line, ns+"/quiet") {
			refused = line
		}
	}
	g.Expect(refused).To(And(ContainSubstring(`"receiver":"`+ns+`/quiet"`), ContainSubstring(`"type":"github"`),
		ContainSubstring(`"event":"push"`), ContainSubstring(`"remote":"127.0.0.1:`)))
}
