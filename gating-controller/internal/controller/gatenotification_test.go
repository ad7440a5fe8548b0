package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// dashboardURL is the suite's --dashboard-url.
const dashboardURL = "https://gates.example.com/ui/"

// startNotifications runs the GateNotification controller of the suite: it may post to
// 127.0.0.1 only (the test's webhook servers), as --notification-allowed-cidrs=127.0.0.1/32
// would allow, and retries quickly.
func startNotifications(ctx context.Context, mgr ctrl.Manager, recorder kuberecorder.EventRecorder, opts controller.Options) error {
	n := &GateNotificationReconciler{Client: mgr.GetClient(), EventRecorder: recorder,
		DashboardURL: dashboardURL, RequeueDependency: time.Second,
		Sender: &notify.Sender{
			Policy: &notify.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
			Retry:  notify.Retry{Attempts: 5, BaseDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxRetryAfter: 200 * time.Millisecond},
		}}
	if err := n.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	gateReconciler.Notifier = n
	return nil
}

// webhook is a real HTTP endpoint on loopback standing in for a Slack, Teams or generic
// receiver: it answers with the statuses it is given, then 200, and keeps what it received.
type webhook struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []int
	received []received
	// hold, when set, keeps each request hanging until it is closed.
	hold    chan struct{}
	entered chan struct{}
}

type received struct {
	body      []byte
	signature string
	path      string
}

func newWebhook(t *testing.T, answers ...int) *webhook {
	w := &webhook{answers: answers, entered: make(chan struct{}, 16)}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.received = append(w.received, received{body: body, signature: r.Header.Get("X-Signature"), path: r.URL.Path})
		status := http.StatusOK
		if len(w.answers) > 0 {
			status, w.answers = w.answers[0], w.answers[1:]
		}
		hold := w.hold
		w.mu.Unlock()
		w.entered <- struct{}{}
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
		rw.WriteHeader(status)
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhook) requests() []received {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]received(nil), w.received...)
}

// createNotification creates the Secret (address, token) and the GateNotification.
func createNotification(t *testing.T, ns, name, address, token string, spec gatingv1.GateNotificationSpec) {
	t.Helper()
	g := NewWithT(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-webhook"},
		StringData: map[string]string{"address": address, "token": token}}
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	spec.SecretRef = &meta.LocalObjectReference{Name: secret.Name}
	gn := &gatingv1.GateNotification{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	g.Expect(k8s.Create(context.Background(), gn)).To(Succeed())
}

func getNotification(g Gomega, ns, name string) *gatingv1.GateNotification {
	gn := &gatingv1.GateNotification{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gn)).To(Succeed())
	return gn
}

// notificationReady is the Ready condition of a GateNotification as "status|reason|message".
func notificationReady(ns, name string) func(g Gomega) string {
	return func(g Gomega) string { return condition(getNotification(g, ns, name), meta.ReadyCondition) }
}

// A close request (`kubectl gate close`) reaches a generic-hmac endpoint, signed; the endpoint
// first answers 500, so the event is posted twice, delivered once, and the notification is Ready.
func TestGateNotificationDeliversASignedCloseAfterA500(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T09:00:00Z")
	hook := newWebhook(t, http.StatusInternalServerError)
	const token = "hmac-t0ken-of-the-test"
	createNotification(t, ns, "freeze-alerts", hook.URL+"/hooks/s3cr3t-path", token, gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationGenericHMAC, Gates: []string{"production"},
		Events: []gatingv1.GateEventType{gatingv1.GateEventOpened, gatingv1.GateEventClosed},
	})
	g.Eventually(notificationReady(ns, "freeze-alerts"), timeout).Should(Equal("True|Succeeded|Ready to deliver generic-hmac events"))

	gate := createGate(t, ns, "production", gatingv1.GateSpec{Window: duration("2h")})
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	g.Consistently(hook.requests, "300ms").Should(BeEmpty(), "the first state of a new gate is no transition")

	setClock("2021-03-26T10:00:00Z")
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T10:00:00Z",
		gatingv1.CloseRequestedByAnnotation, "alice", gatingv1.CloseReasonAnnotation, "release freeze")
	g.Eventually(openedCondition(ns, "production"), timeout).
		Should(Equal("False|ReconciliationSucceeded|Gate scheduled for opening at 2021-03-26T12:00:00Z"))

	g.Eventually(hook.requests, timeout).Should(HaveLen(2))
	g.Consistently(hook.requests, "300ms").Should(HaveLen(2))
	reqs := hook.requests()
	g.Expect(reqs[0].body).To(Equal(reqs[1].body), "the retry posts the same event")
	for _, r := range reqs {
		g.Expect(r.path).To(Equal("/hooks/s3cr3t-path"))
		mac := hmac.New(sha256.New, []byte(token))
		mac.Write(r.body)
		g.Expect(r.signature).To(Equal("sha256="+hex.EncodeToString(mac.Sum(nil))), "X-Signature is the HMAC-SHA256 of the body")
	}
	var payload map[string]any
	g.Expect(json.Unmarshal(reqs[1].body, &payload)).To(Succeed())
	g.Expect(payload).To(Equal(map[string]any{
		"gate":          "production",
		"namespace":     ns,
		"event":         "Closed",
		"state":         "closed",
		"previousState": "opened",
		"reason":        "release freeze",
		"message":       "Gate scheduled for opening at 2021-03-26T12:00:00Z (request, requested by alice: release freeze)",
		"cause":         "request",
		"requestedBy":   "alice",
		"until":         "2021-03-26T12:00:00Z",
		"time":          "2021-03-26T10:00:00Z",
		"url":           "https://gates.example.com/ui/#" + ns + "/production",
	}))

	g.Eventually(notificationReady(ns, "freeze-alerts"), timeout).Should(Equal("True|Succeeded|Delivered the Closed event of gate 'production'"))
	last := getNotification(g, ns, "freeze-alerts").Status.LastDelivery
	g.Expect(last).NotTo(BeNil())
	g.Expect([]any{last.Event, last.Gate, last.Result, last.Attempts}).To(Equal([]any{gatingv1.GateEventClosed, "production", "Succeeded", 2}))
	g.Expect(getNotification(g, ns, "freeze-alerts").Status.ObservedGeneration).To(Equal(int64(1)))
}

// A GateKeeper's freeze closes the gate: the event names the keeper; a broken keeper is a
// KeeperFailed event. The notification selects the gate by label; the other gate names the
// notification in its notificationRefs.
func TestGateNotificationForwardsKeeperTransitionsAndFailures(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2026-12-02T10:00:00Z")
	hook := newWebhook(t)
	createNotification(t, ns, "keeper-alerts", hook.URL+"/in", "", gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationGeneric, GateSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
		Events: []gatingv1.GateEventType{gatingv1.GateEventClosed, gatingv1.GateEventKeeperFailed},
	})
	gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "production", Labels: map[string]string{"tier": "prod"}}}
	g.Expect(k8s.Create(context.Background(), gate)).To(Succeed())
	g.Eventually(openedCondition(ns, "production"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	createGate(t, ns, "staging", gatingv1.GateSpec{NotificationRefs: []meta.LocalObjectReference{{Name: "keeper-alerts"}}})
	g.Eventually(openedCondition(ns, "staging"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))

	createKeeper(t, ns, "freeze", gatingv1.GateKeeperSpec{Gate: "production", CronJob: &gatingv1.CronJob{Closed: []string{"* * * * *"}}})
	g.Eventually(hook.requests, timeout).Should(HaveLen(1))
	var payload map[string]any
	g.Expect(json.Unmarshal(hook.requests()[0].body, &payload)).To(Succeed())
	g.Expect(payload).To(HaveKeyWithValue("event", "Closed"))
	g.Expect(payload).To(HaveKeyWithValue("cause", "gatekeeper/freeze"))
	g.Expect(payload).To(HaveKeyWithValue("gateKeeper", "freeze"))
	g.Expect(payload).To(HaveKeyWithValue("previousState", "opened"))
	g.Expect(hook.requests()[0].signature).To(BeEmpty(), "generic is not signed")

	createKeeper(t, ns, "typo", gatingv1.GateKeeperSpec{Gate: "staging", CronJob: &gatingv1.CronJob{Closed: []string{"* * * * SAT-SUN-X"}}})
	g.Eventually(hook.requests, timeout).Should(HaveLen(3)) // KeeperFailed, then the Closed it causes
	events := map[string]map[string]any{}
	for _, r := range hook.requests()[1:] {
		var p map[string]any
		g.Expect(json.Unmarshal(r.body, &p)).To(Succeed())
		events[p["event"].(string)] = p
	}
	g.Expect(events).To(HaveKey("KeeperFailed"))
	g.Expect(events["KeeperFailed"]).To(HaveKeyWithValue("gate", "staging"))
	g.Expect(events["KeeperFailed"]).To(HaveKeyWithValue("gateKeeper", "typo"))
	g.Expect(events["KeeperFailed"]["message"]).To(HavePrefix("GateKeeper 'typo' cannot be evaluated, the gate is held closed until it is fixed: "))
	g.Expect(events).To(HaveKey("Closed"))
	g.Expect(events["Closed"]).To(HaveKeyWithValue("cause", "gatekeeper/typo"))
}

// An endpoint that keeps failing: after 5 attempts the notification is Ready=False
// DeliveryFailed, with a Warning event; neither the token nor the secret path of the URL is in
// the logs, the events or the status.
func TestGateNotificationRetriesExhausted(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T09:00:00Z")
	hook := newWebhook(t, 500, 500, 500, 500, 500, 500)
	const token, path = "t0ken-never-logged", "/services/T000/B000/s3cr3t-never-logged"
	createNotification(t, ns, "ops", hook.URL+path, token, gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationGenericHMAC, Gates: []string{"*"}, Events: []gatingv1.GateEventType{gatingv1.GateEventClosed},
	})
	gate := createGate(t, ns, "deploys", gatingv1.GateSpec{})
	g.Eventually(openedCondition(ns, "deploys"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))
	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T09:00:00Z")

	const msg = "Closed event of gate 'deploys' not delivered: the endpoint answered 500 Internal Server Error (after 5 attempts)"
	g.Eventually(notificationReady(ns, "ops"), timeout).Should(Equal("False|DeliveryFailed|" + msg))
	g.Expect(hook.requests()).To(HaveLen(5))
	g.Eventually(eventsOf(ns, "ops"), timeout).Should(ContainElement("Warning DeliveryFailed: " + msg))
	last := getNotification(g, ns, "ops").Status.LastDelivery
	g.Expect([]any{last.Event, last.Gate, last.Result, last.Attempts}).To(Equal([]any{gatingv1.GateEventClosed, "deploys", "Failed", 5}))

	raw, err := json.Marshal(getNotification(g, ns, "ops").Status)
	g.Expect(err).NotTo(HaveOccurred())
	everything := append(append(logs.Lines(), eventsOf(ns, "ops")(g)...), eventsOf(ns, "deploys")(g)...)
	everything = append(everything, string(raw))
	g.Expect(strings.Join(everything, "\n")).To(ContainSubstring("notification delivery failed"), "the failure is logged")
	for _, secret := range []string{token, "s3cr3t-never-logged", hook.URL} {
		g.Expect(strings.Join(everything, "\n")).NotTo(ContainSubstring(secret))
	}
}

// A tenant's address on loopback is refused, before any event, when the controller's flags do
// not allow it.
func TestGateNotificationRefusesLoopback(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	createNotification(t, ns, "sneaky", "http://127.0.0.2:8080/metrics", "", gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationSlack, Gates: []string{"*"}, Events: []gatingv1.GateEventType{gatingv1.GateEventClosed},
	})
	g.Eventually(notificationReady(ns, "sneaky"), timeout).Should(Equal("False|AddressRefused|refusing to connect to 127.0.0.2, a loopback address: " +
		"the controller posts to such addresses only when --notification-allowed-cidrs allows them (e.g. --notification-allowed-cidrs=127.0.0.2/32)"))
}

// A webhook that hangs longer than its timeout does not hold the gate: the gate closes and opens
// again while the first delivery still waits for its answer.
func TestGateNotificationSlowWebhookDoesNotDelayTheGate(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	setClock("2021-03-26T09:00:00Z")
	hook := newWebhook(t)
	hook.hold = make(chan struct{})
	defer close(hook.hold)
	createNotification(t, ns, "slow", hook.URL+"/slow", "", gatingv1.GateNotificationSpec{
		Type: gatingv1.NotificationMSTeams, Gates: []string{"release"}, Timeout: duration("30s"),
		Events: []gatingv1.GateEventType{gatingv1.GateEventOpened, gatingv1.GateEventClosed},
	})
	gate := createGate(t, ns, "release", gatingv1.GateSpec{})
	g.Eventually(openedCondition(ns, "release"), timeout).Should(Equal("True|ReconciliationSucceeded|Gate opened by default"))

	annotate(t, gate, gatesapi.CloseRequestAnnotation, "2021-03-26T09:00:00Z")
	g.Eventually(hook.entered, timeout).Should(Receive(), "the Closed event reached the webhook, which hangs")
	g.Eventually(openedCondition(ns, "release"), "2s").Should(HavePrefix("False|"))

	setClock("2021-03-26T09:05:00Z")
	annotate(t, gate, gatesapi.OpenRequestAnnotation, "2021-03-26T09:05:00Z")
	started := time.Now()
	g.Eventually(openedCondition(ns, "release"), "2s").Should(HavePrefix("True|"), "the gate opens while the webhook hangs")
	g.Expect(time.Since(started)).To(BeNumerically("<", 2*time.Second))
	g.Expect(hook.requests()).To(HaveLen(1), "the first delivery is still hanging: the Opened event waits behind it")
}
