package scenarios

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

const alertsManifests = `apiVersion: v1
kind: Secret
metadata:
  name: webhook
stringData:
  address: __ENDPOINT__
  token: alert-s3cr3t
  headers: |
    X-Tenant: team-a
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: webhook
spec:
  type: generic-hmac
  secretRef:
    name: webhook
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: sources
spec:
  providerRef:
    name: webhook
  eventSeverity: info
  eventSources:
    - kind: GitRepository
      name: '*'
  exclusionList:
    - "^garbage collected"
  eventMetadata:
    cluster: scenarios
---
apiVersion: v1
kind: Secret
metadata:
  name: slack-bot
stringData:
  address: __SLACK__
  token: xoxb-sluice-test
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: slack
spec:
  type: slack
  channel: gitops
  secretRef:
    name: slack-bot
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: failures
spec:
  providerRef:
    name: slack
  eventSeverity: error
  eventSources:
    - kind: GitRepository
      name: app
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
  annotations:
    event.toolkit.fluxcd.io/token: deploy-7
spec:
  interval: 2s
  url: __GIT__
  secretRef:
    name: git-credentials
`

// signedEvent is an event as a generic-hmac Provider receives it.
type signedEvent struct {
	Severity, Reason, Message string
	Metadata                  map[string]string
	Signed                    bool
	Tenant                    string
}

// Flux's Alert and Provider, served by the gating-controller: the source-controller posts its
// events (--events-addr) to the gating-controller's event receiver, which sends those an Alert
// selects to its generic-hmac Provider, signed with the Secret's token. A GitRepository whose
// repository is missing fails, then recovers once it exists: both reach the endpoint.
func TestScenarioAlertsReachAProvider(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "alerts")
	g := s.g
	var mu sync.Mutex
	var got []signedEvent
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte("alert-s3cr3t"))
		mac.Write(body)
		var ev signedEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev.Signed = r.Header.Get("X-Signature") == "sha256="+hex.EncodeToString(mac.Sum(nil))
		ev.Tenant = r.Header.Get("X-Tenant")
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}))
	t.Cleanup(endpoint.Close)
	received := func() []signedEvent { mu.Lock(); defer mu.Unlock(); return append([]signedEvent(nil), got...) }
	// A Slack endpoint, as chat.postMessage takes a bot's messages.
	var slackMessages []slackMessage
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m slackMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.Authorization = r.Header.Get("Authorization")
		mu.Lock()
		slackMessages = append(slackMessages, m)
		mu.Unlock()
	}))
	t.Cleanup(slack.Close)
	posted := func() []slackMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]slackMessage(nil), slackMessages...)
	}

	s.gitSecret(s.ns, "git-credentials")
	missing := servers.Git.HTTPURL() + "/alerts-app.git"
	s.create(alertsManifests, "__ENDPOINT__", endpoint.URL, "__SLACK__", slack.URL, "__GIT__", missing)
	failure := And(HaveField("Severity", "error"), HaveField("Signed", true), HaveField("Tenant", "team-a"),
		HaveField("Metadata", And(HaveKeyWithValue("cluster", "scenarios"), HaveKeyWithValue("token", "deploy-7"))))
	g.Eventually(received, timeout).Should(ContainElement(failure), "the failure reaches the endpoint, signed")
	// The errors-only Alert posts the failure to Slack, as the bot, in Flux's message.
	g.Eventually(posted, timeout).Should(ContainElement(And(
		HaveField("Authorization", "Bearer xoxb-sluice-test"), HaveField("Channel", "gitops"), HaveField("Username", "source-controller"),
		HaveField("Attachments", ConsistOf(And(HaveField("Color", "danger"), HaveField("AuthorName", "gitrepository/app.alerts")))),
	)))

	_, sha := s.newRepo("alerts-app", map[string]string{"app.yaml": configMapYAML("app", "v1")})
	g.Eventually(received, timeout).Should(ContainElement(And(HaveField("Severity", "info"), HaveField("Reason", "NewArtifact"),
		HaveField("Signed", true), HaveField("Metadata", HaveKeyWithValue("revision", "master@sha1:"+sha))),
	), "the recovery reaches the endpoint, with its revision")
	for _, m := range posted() {
		g.Expect(m.Attachments[0].Color).To(Equal("danger"), "the errors-only Alert posts no info event")
	}
}

// slackMessage is what a Slack endpoint receives.
type slackMessage struct {
	Channel, Username string
	Attachments       []struct {
		Color      string `json:"color"`
		AuthorName string `json:"author_name"`
		Text       string `json:"text"`
	}
	Authorization string
}
