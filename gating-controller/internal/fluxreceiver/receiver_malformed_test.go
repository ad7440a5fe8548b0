package fluxreceiver

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/testenv"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// malformedBody is a body that no sender makes, and the registry types (of those that decode
// their payload) into whose payload it still decodes.
type malformedBody struct {
	name    string
	body    string
	decodes []string
}

const (
	dockerhub = notificationv1.DockerHubReceiver
	quay      = notificationv1.QuayReceiver
	acr       = notificationv1.ACRReceiver
	nexus     = notificationv1.NexusReceiver
)

// malformedBodies are the bodies of Argo CD's CVE-2025-59531, CVE-2025-59537 and CVE-2025-59538
// class: truncated JSON, nulls where objects are expected, arrays where objects are, values of
// other types, 10,000-element arrays and deep nesting, all within the 1 MiB cap. None names a
// repository, so that no push is routed: a body that is taken asks every object of the Receiver.
var malformedBodies = []malformedBody{
	{name: "truncated", body: `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.exa`},
	{name: "null", body: `null`, decodes: []string{dockerhub, quay, acr, nexus}},
	{name: "null repository", body: `{"repository": null}`, decodes: []string{dockerhub, quay, acr, nexus}},
	{name: "null elements", body: `{"changes":[null],"push":{"changes":[null,{"new":null}]},"repository":{"links":{"clone":[null]}}}`,
		decodes: []string{dockerhub, quay, acr, nexus}},
	{name: "empty array", body: `[]`},
	{name: "array of a push", body: `[{"ref":"refs/heads/main"}]`},
	{name: "array repository", body: `{"repository": []}`, decodes: []string{quay, acr, nexus}},
	{name: "arrays for objects", body: `{"push_data":[],"target":[],"updated_tags":{}}`, decodes: []string{nexus}},
	{name: "numbers for strings", body: `{"action":1,"repositoryName":true,"docker_url":2,"push_data":{"tag":3}}`},
	{name: "other types", body: `{"ref":1,"repository":"x","changes":{"a":1},"push":{"changes":[null,1,"x",{"new":null}]}}`,
		decodes: []string{quay, acr, nexus}},
	{name: "repeated key", body: `{"push_data":{"tag":"v1"},"push_data":"x"}`, decodes: []string{quay, acr, nexus}},
	{name: "10000 changes and tags", body: `{"changes":[` + strings.Repeat(`{"ref":{"id":"refs/heads/main"}},`, 9999) +
		`{}],"updated_tags":[` + strings.Repeat(`"v1",`, 9999) + `"v1"]}`, decodes: []string{dockerhub, quay, acr, nexus}},
	{name: "10000 numbers for tags", body: `{"updated_tags":[` + strings.Repeat(`1,`, 9999) + `1]}`, decodes: []string{dockerhub, acr, nexus}},
	{name: "10000-element array", body: "[" + strings.Repeat("0,", 9999) + "0]"},
	{name: "20000 nested arrays", body: `{"push_data":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`},
	{name: "5000 nested arrays", body: `{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
		decodes: []string{dockerhub, quay, acr, nexus}},
}

// Malformed payloads, sent with valid credentials for every type (the class of Argo CD's
// CVE-2025-59531, CVE-2025-59537 and CVE-2025-59538: unauthenticated panics in webhook parsers),
// through the real handler: each is answered 400 or 200, never 500 nor a dropped connection (a
// panic), and the server answers the next good delivery. A registry type that decodes its payload
// (dockerhub, quay, acr, nexus) answers 400 to a body that does not decode, and then asks nothing;
// the other types do not read the body to authenticate it, and ask every object for a body that
// is no push.
//
// Checked against reintroduced bugs (then restored): decodePayload returning nil whatever the
// body (dockerhub/truncated: 200 where 400 is expected, and the GitRepository asked); ParsePush
// asserting `change.(map[string]any)` without ok (generic-hmac/"null elements": the server's
// panic drops the connection, and post fails with EOF).
func TestReceiverMalformedPayloads(t *testing.T) {
	const token = "malformed-token-2b7e"
	// Each Receiver takes the 17 requests of its subtest, and a registry body that does not decode
	// counts as a failed attempt of the address (429 once they are spent, as documented; that
	// it locks out no caller is TestReceiverOversizedBodiesLockOutNobody's): neither budget is
	// what this tests.
	url := startServer(t, Limits{Burst: 100, FailureBurst: 1000})
	seen := map[string]bool{}
	for _, tc := range senderCases(token) {
		if seen[tc.typ] {
			continue
		}
		seen[tc.typ] = true
		t.Run(tc.typ, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			newGitRepository(t, ns, "app", "https://git.example.com/team/app", map[string]any{"branch": "main"})
			path := newReceiver(t, ns, "hook", tc.typ, token, []notificationv1.ReceiverResource{resource("GitRepository", "app")},
				func(r *notificationv1.Receiver) { r.Spec.Events = tc.events })
			_, decoding := payloadShapes[tc.typ]

			for _, b := range malformedBodies {
				body := []byte(b.body)
				g.Expect(len(body)).To(BeNumerically("<=", DefaultMaxBodySize), b.name)
				before := requestedAt(gitRepositoryGVK, ns, "app")(g)
				code, msg := postTo(t, url, path, body, tc.good(body))
				// The patch is made before the answer: what the annotation is now, it stays.
				after := requestedAt(gitRepositoryGVK, ns, "app")(g)
				if decoding && !slices.Contains(b.decodes, tc.typ) {
					g.Expect(code).To(Equal(400), "%s: %s", b.name, msg)
					g.Expect(msg).To(ContainSubstring("webhook payload"), b.name)
					g.Expect(after).To(Equal(before), "%s: an object was asked to reconcile", b.name)
					continue
				}
				g.Expect(code).To(Equal(200), "%s: %s", b.name, msg)
				g.Expect(msg).To(Equal("reconciliation requested for 1 object"), b.name)
				g.Expect(after).NotTo(Equal(before), b.name)
			}

			code, msg := postTo(t, url, path, tc.body, tc.good(tc.body))
			g.Expect(code).To(Equal(200), msg)
			g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
		})
	}
	g := NewWithT(t)
	g.Expect(seen).To(HaveLen(len(implemented)), "a type of the receiver has no case")
}

// A body that a Receiver's filter cannot be evaluated on (a field the expression reads is
// missing, null or of another type) is the body's fault: 400, the object is not asked, and the
// Receiver's Warning event says why; a good body is then taken. Sending the same body again
// cannot help, so a 500 (retry) would be wrong. Checked against the earlier behaviour: with
// the handler answering 500 for every error, this test fails on the first body.
func TestReceiverFilterFailingOnTheBody(t *testing.T) {
	g := NewWithT(t)
	const token = "filter-token-5c1d"
	url := startServer(t, Limits{Burst: 100, FailureBurst: 1000})
	ns := env.Namespace(t)
	newGitRepository(t, ns, "app", "https://git.example.com/team/app", nil)
	path := newReceiver(t, ns, "hook", notificationv1.GenericHMACReceiver, token,
		[]notificationv1.ReceiverResource{resource("GitRepository", "app")},
		func(r *notificationv1.Receiver) { r.Spec.ResourceFilter = `req.ref.startsWith("refs/heads/")` })
	var generic senderCase
	for _, tc := range senderCases(token) {
		if tc.typ == notificationv1.GenericHMACReceiver {
			generic = tc
			break
		}
	}
	before := requestedAt(gitRepositoryGVK, ns, "app")(g)
	for _, body := range []string{`{}`, `{"ref":null}`, `{"ref":5}`, `{"ref":["refs/heads/main"]}`, `null`, `[]`} {
		code, msg := postTo(t, url, path, []byte(body), generic.good([]byte(body)))
		g.Expect(code).To(Equal(400), "%s: %s", body, msg)
		g.Expect(msg).To(HavePrefix("the Receiver's filters could not be evaluated on this body"))
	}
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).To(Equal(before), "the object was asked")
	g.Eventually(testenv.EventsOf(k8s, types.NamespacedName{Namespace: ns, Name: "hook"}, notificationv1.ReceiverKind), 10*time.Second).
		Should(ContainElement(And(HavePrefix("Warning ReconciliationRequestFailed: "), ContainSubstring(`evaluating the CEL expression 'req.ref.startsWith("refs/heads/")'`))))

	body := []byte(`{"ref":"refs/heads/main"}`)
	code, msg := postTo(t, url, path, body, generic.good(body))
	g.Expect(code).To(Equal(200), msg)
	g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(Equal(before))
}
