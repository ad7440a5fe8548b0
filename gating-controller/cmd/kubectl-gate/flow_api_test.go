package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// getFlow reads the page's data as the page does.
func getFlow(t testing.TB, url string) flowData {
	t.Helper()
	res, body := get(t, url+"api/flow", "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("api/flow: %d %s", res.StatusCode, body)
	}
	var data flowData
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatal(err)
	}
	return data
}

func nodeOf(data flowData, id string) *flowNode {
	for i := range data.Nodes {
		if data.Nodes[i].ID == id {
			return &data.Nodes[i]
		}
	}
	return nil
}

// post sends an action as the page does (header and JSON), with extra headers to try others.
func post(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	res, text := request(t, http.MethodPost, url, body, headers)
	return res.StatusCode, text
}

// flowEvents opens the page's event stream and returns its events' data as they come.
func flowEvents(t *testing.T, url string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/flow/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("api/flow/events answered %s %q", res.Status, ct)
	}
	out := make(chan string, 100)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

// The flow of a GitRepository behind two gates read by two ManifestGenerations, served from the
// watches: the upstream, the gates on the edges, what waits and why; a change in the cluster
// streams an event within a second and shows in the next read; the buttons act as the viewer.
func TestFlowAPIIsLiveAndActsAsTheViewer(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns) // change-freeze opened, bypass-signoff opened by a request
	createYAML(t, ns, gitRepository("demo", "bypass-signoff"))
	for _, mg := range []struct{ name, gates string }{{"staging", ""}, {"production", "\n  gates: {refs: [change-freeze]}"}} {
		createYAML(t, ns, `apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: `+mg.name+`}
spec:
  sourceRef: {kind: GitRepository, name: demo}
  path: ./`+mg.name+`
  serviceAccountName: apps
  interval: 1m`+mg.gates+"\n")
	}
	url := startUI(t, "-n", ns)

	data := getFlow(t, url)
	repo, production := "GitRepository/"+ns+"/demo", "ManifestGeneration/"+ns+"/production"
	g.Expect(data.Namespace).To(Equal(ns))
	g.Expect(data.Edges).To(ContainElements(
		flowEdge{From: "Upstream//https://git.example.com/demo.git", To: repo,
			Gates: []flowGate{{Namespace: ns, Name: "bypass-signoff", State: "opened"}}},
		flowEdge{From: repo, To: production, Gates: []flowGate{{Namespace: ns, Name: "change-freeze", State: "opened"}}},
		flowEdge{From: repo, To: "ManifestGeneration/" + ns + "/staging"},
	))
	g.Expect(nodeOf(data, repo).Actions).To(Equal(&nodeActions{Reconcile: true, Suspend: true}))
	g.Expect(data.Gates).To(HaveLen(2))
	g.Expect(data.Gates[0].Actions).To(Equal(&gateActions{Open: true, Close: true, Respond: true}))

	// Live: the change freeze closes and production is held behind it.
	events := flowEvents(t, url)
	g.Eventually(events).WithTimeout(5 * time.Second).Should(Receive())
	setStatus(t, getGate(t, ns, "change-freeze"), closedByFreeze())
	mg := &unstructured.Unstructured{}
	mg.SetAPIVersion("generator.toolkit.fluxcd.io/v1alpha1")
	mg.SetKind("ManifestGeneration")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "production"}, mg)).To(Succeed())
	g.Expect(unstructured.SetNestedMap(mg.Object, map[string]any{"state": "closed (change-freeze)",
		"heldSince": "2026-12-25T00:00:05Z", "waitingRevision": "main@sha1:2b1f"}, "status", "gates")).To(Succeed())
	g.Expect(unstructured.SetNestedField(mg.Object, "main@sha1:0a0a", "status", "lastAppliedRevision")).To(Succeed())
	changedAt := time.Now()
	g.Expect(env.Client.Status().Update(context.Background(), mg)).To(Succeed())
	g.Eventually(func() string {
		<-events
		return nodeOf(getFlow(t, url), production).Why
	}).WithTimeout(5 * time.Second).Should(Equal("waiting to apply main@sha1:2b1f: gate " + ns +
		"/change-freeze is closed (Gate closed by the schedule of GateKeeper 'change-freeze-gatekeeper' until 2026-12-26T00:00:00Z)"))
	g.Expect(time.Since(changedAt)).To(BeNumerically("<", 2*time.Second), "the change reached the page's data late")

	// Writes come from the page only: not from a form (no header, or another content type), nor
	// from another site's script.
	reconcile := url + "api/objects/GitRepository/" + ns + "/demo/reconcile"
	for name, headers := range map[string]map[string]string{
		"no header":    {"X-Sluice-Dashboard": ""},
		"a form":       {"Content-Type": "application/x-www-form-urlencoded"},
		"another site": {"Origin": "http://attacker.example"},
	} {
		code, body := post(t, reconcile, "{}", headers)
		g.Expect(code).To(Equal(http.StatusForbidden), name)
		g.Expect(body).To(Equal("actions come from the dashboard page only"), name)
	}
	source := &unstructured.Unstructured{}
	source.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	source.SetKind("GitRepository")
	readSource := func() *unstructured.Unstructured {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo"}, source)).To(Succeed())
		return source
	}
	g.Expect(readSource().GetAnnotations()).NotTo(HaveKey(reconcileRequestAnnotation))

	code, body := post(t, reconcile, "{}", nil)
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(Equal(`{"message":"GitRepository ` + ns + `/demo: reconcile requested"}`))
	g.Expect(readSource().GetAnnotations()).To(HaveKey(reconcileRequestAnnotation))
	code, body = post(t, url+"api/objects/GitRepository/"+ns+"/demo/suspend", "{}", nil)
	g.Expect(code).To(Equal(http.StatusOK), body)
	suspended, _, _ := unstructured.NestedBool(readSource().Object, "spec", "suspend")
	g.Expect(suspended).To(BeTrue())
	g.Eventually(func() string { return nodeOf(getFlow(t, url), repo).Status }).WithTimeout(5 * time.Second).Should(Equal("suspended"))
	code, body = post(t, url+"api/objects/GitRepository/"+ns+"/demo/resume", "{}", nil)
	g.Expect(code).To(Equal(http.StatusOK), body)
	_, found, _ := unstructured.NestedBool(readSource().Object, "spec", "suspend")
	g.Expect(found).To(BeFalse())

	// A gate closed from the page records who asked, as `kubectl gate close` does.
	code, body = post(t, url+"api/gates/"+ns+"/bypass-signoff/close", `{"reason": "<b>incident</b>", "duration": "2h"}`, nil)
	g.Expect(code).To(Equal(http.StatusOK), body)
	ann := getGate(t, ns, "bypass-signoff").Annotations
	g.Expect(ann).To(HaveKeyWithValue(closeRequest.requestedBy, "sluice-admin"))
	g.Expect(ann).To(HaveKeyWithValue(closeRequest.reason, "<b>incident</b>"))
	g.Expect(ann).To(HaveKeyWithValue(closeRequest.duration, "2h"))
	code, body = post(t, url+"api/gates/"+ns+"/bypass-signoff/close", `{"duration": "soon"}`, nil)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(body).To(HavePrefix(`invalid duration "soon"`))

	// History: the artifact a source reports, a gate's periods, and the Held event.
	g.Expect(env.Client.Create(context.Background(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "production.held"},
		InvolvedObject: corev1.ObjectReference{Kind: "ManifestGeneration", Namespace: ns, Name: "production"},
		Type:           corev1.EventTypeNormal, Reason: "Held", Message: "revision main@sha1:2b1f held by gate change-freeze",
		LastTimestamp: metav1.NewTime(time.Date(2026, 12, 25, 0, 0, 5, 0, time.UTC)),
	})).To(Succeed())
	var h flowHistory
	res, raw := get(t, url+"api/flow/history?kind=ManifestGeneration&namespace="+ns+"&name=production", "")
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), raw)
	g.Expect(json.Unmarshal([]byte(raw), &h)).To(Succeed())
	g.Expect(h.Revisions).To(Equal([]historyRevision{
		{Time: "2026-12-25T00:00:05Z", Revision: "revision main@sha1:2b1f held by gate change-freeze", Note: "Held"},
		{Revision: "main@sha1:0a0a", Note: "applied"},
	}))
	g.Expect(h.Events).To(HaveLen(1))
	res, raw = get(t, url+"api/flow/history?kind=Gate&namespace="+ns+"&name=change-freeze", "")
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), raw)
	g.Expect(json.Unmarshal([]byte(raw), &h)).To(Succeed())
	g.Expect(h.Periods).To(Equal([]historyPeriod{
		{State: "closed", From: "2026-12-25T00:00:00Z", Cause: "gatekeeper/change-freeze-gatekeeper"},
		{State: "opened", From: "2026-12-01T08:00:00Z", To: "2026-12-25T00:00:00Z", Cause: "gatekeeper/change-freeze-gatekeeper"},
	}))
}

// closedByFreeze is the change freeze's status on 25 December.
func closedByFreeze() gatingv1alpha1.GateStatus {
	return gatingv1alpha1.GateStatus{
		Conditions: []metav1.Condition{
			openedCondition(false, "Gate scheduled for opening at 2026-12-26T00:00:00Z"),
			readyCondition("Gate closed by the schedule of GateKeeper 'change-freeze-gatekeeper' until 2026-12-26T00:00:00Z"),
		},
		NextTransitionAt: at("2026-12-26T00:00:00Z"),
		History: []gatingv1alpha1.GateTransition{
			{Time: *at("2026-12-25T00:00:00Z"), Opened: false, Cause: "gatekeeper/change-freeze-gatekeeper"},
			{Time: *at("2026-12-01T08:00:00Z"), Opened: true, Cause: "gatekeeper/change-freeze-gatekeeper"},
		},
	}
}

// A viewer who may read but not write gets no buttons, and the API server refuses the action
// when it is tried anyway.
func TestFlowAPIOffersNoButtonsTheViewerCannotUse(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns)
	createYAML(t, ns, gitRepository("demo", "bypass-signoff"))
	viewer := "flow-viewer-" + ns
	bindRole(t, ns, viewer,
		rbacv1.PolicyRule{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "list", "watch"}})
	url := startUI(t, "-n", ns, "--as", viewer)

	data := getFlow(t, url)
	repo := nodeOf(data, "GitRepository/"+ns+"/demo")
	g.Expect(repo).NotTo(BeNil())
	g.Expect(repo.Actions).To(BeNil())
	g.Expect(data.Gates).To(HaveLen(2))
	g.Expect(data.Gates[0].Actions).To(Equal(&gateActions{}))
	// The kinds the viewer may not list are named, not silently empty.
	g.Expect(data.Skipped).To(ContainElement(skippedKind{Kind: "ManifestGeneration", Reason: "forbidden: your RBAC does not let you list them"}))

	code, body := post(t, url+"api/objects/GitRepository/"+ns+"/demo/reconcile", "{}", nil)
	g.Expect(code).To(Equal(http.StatusForbidden))
	g.Expect(body).To(ContainSubstring(`User "` + viewer + `" cannot patch resource "gitrepositories"`))
	code, body = post(t, url+"api/gates/"+ns+"/change-freeze/close", "{}", nil)
	g.Expect(code).To(Equal(http.StatusForbidden))
	g.Expect(body).To(ContainSubstring(`cannot patch resource "gates"`))
}

// bindRole gives user, in ns, a Role of the rules (named after the user).
func bindRole(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(env.Client.Create(context.Background(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: rules})).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
}
