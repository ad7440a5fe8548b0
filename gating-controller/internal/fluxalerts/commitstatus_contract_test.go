// Contract tests of the github and gitlab commit statuses against recorded exchanges from the
// forges' REST API documentation (testdata/contract, each file naming its page). GitHub and
// GitLab cannot be reached from the machines that run these tests; Gitea, which can, is tested
// for real (gitea_test.go). The test server checks each request the gating-controller sends
// (method, path, credentials, the documented parameters) and answers with the documented
// bodies, with the statuses posted so far in the documented order.
package fluxalerts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// contractFixture is a recorded exchange: the documented answer and its status.
type contractFixture struct {
	Source   string          `json:"source"`
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
}

func loadFixture(t *testing.T, forge, name string) contractFixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contract", forge, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f contractFixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s/%s: %v", forge, name, err)
	}
	return f
}

// forgeContract describes one forge's commit status API as documented.
type forgeContract struct {
	forge string
	// post and list are the escaped paths of the commit's statuses.
	post, list string
	// authorized checks the request's credentials and documented headers.
	authorized func(*http.Request) bool
	// nameKey names the status's context in requests and answers; stateKey its state in answers.
	nameKey, stateKey string
	states            []string
	// latestOnly: the list holds the latest status of each name only (GitLab).
	latestOnly    bool
	create, list_ string
}

// contractServer answers as the forge, keeping the statuses posted.
type contractServer struct {
	t  *testing.T
	c  forgeContract
	mu sync.Mutex
	// posted are the request bodies, oldest first.
	posted []map[string]any
}

func (s *contractServer) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	if !s.c.authorized(r) {
		reply(http.StatusUnauthorized, loadFixture(s.t, s.c.forge, "unauthorized").Response)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.EscapedPath() == s.c.post:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !slices.Contains(s.c.states, body["state"].(string)) {
			s.t.Errorf("%s: a status of an undocumented shape: %v", s.c.forge, body)
			reply(http.StatusBadRequest, map[string]string{"message": "invalid"})
			return
		}
		for k := range body {
			if !slices.Contains([]string{"state", s.c.nameKey, "description", "target_url"}, k) {
				s.t.Errorf("%s: an undocumented parameter %q", s.c.forge, k)
			}
		}
		s.posted = append(s.posted, body)
		f := loadFixture(s.t, s.c.forge, s.c.create)
		reply(f.Status, s.status(f.Response, body))
	case r.Method == http.MethodGet && r.URL.EscapedPath() == s.c.list:
		f := loadFixture(s.t, s.c.forge, s.c.list_)
		var documented []json.RawMessage
		if err := json.Unmarshal(f.Response, &documented); err != nil {
			s.t.Fatal(err)
		}
		var out []any
		seen := map[any]bool{}
		for i := len(s.posted) - 1; i >= 0; i-- {
			name := s.posted[i][s.c.nameKey]
			if s.c.latestOnly && seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, s.status(documented[0], s.posted[i]))
		}
		for _, d := range documented {
			out = append(out, d)
		}
		reply(f.Status, out)
	default:
		s.t.Errorf("%s: an undocumented request %s %s", s.c.forge, r.Method, r.URL.EscapedPath())
		reply(http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

// status is a documented status with the posted state, name and description.
func (s *contractServer) status(documented json.RawMessage, posted map[string]any) map[string]any {
	var st map[string]any
	if err := json.Unmarshal(documented, &st); err != nil {
		s.t.Fatal(err)
	}
	st[s.c.stateKey], st[s.c.nameKey], st["description"] = posted["state"], posted[s.c.nameKey], posted["description"]
	return st
}

func (s *contractServer) bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posted)
}

// Each forge gets Flux's status through its documented API: created once, found in the list and
// not posted again, posted again when the state changes; a refused token is an error that does
// not quote it.
func TestCommitStatusContracts(t *testing.T) {
	const token = "contract-token-0123456789"
	for _, c := range []struct {
		contract forgeContract
		typ      string
		repoPath string
		failed   string
	}{
		{typ: notificationv1beta3.GitHubProvider, repoPath: "/octocat/Hello-World", failed: "failure", contract: forgeContract{
			forge: "github",
			post:  "/api/v3/repos/octocat/Hello-World/statuses/" + sha1Hex,
			list:  "/api/v3/repos/octocat/Hello-World/commits/" + sha1Hex + "/statuses",
			authorized: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer "+token && r.Header.Get("Accept") == "application/vnd.github+json" &&
					r.Header.Get("X-GitHub-Api-Version") == "2022-11-28"
			},
			nameKey: "context", stateKey: "state", states: []string{"error", "failure", "pending", "success"},
			create: "create-a-commit-status", list_: "list-commit-statuses-for-a-reference",
		}},
		{typ: notificationv1beta3.GitLabProvider, repoPath: "/thedude/platform/gitlab-foss", failed: "failed", contract: forgeContract{
			forge: "gitlab",
			post:  "/api/v4/projects/thedude%2Fplatform%2Fgitlab-foss/statuses/" + sha1Hex,
			list:  "/api/v4/projects/thedude%2Fplatform%2Fgitlab-foss/repository/commits/" + sha1Hex + "/statuses",
			authorized: func(r *http.Request) bool {
				return r.Header.Get("PRIVATE-TOKEN") == token
			},
			nameKey: "name", stateKey: "status", states: []string{"pending", "running", "success", "failed", "canceled", "skipped"},
			latestOnly: true, create: "set-the-pipeline-status-of-a-commit", list_: "list-the-statuses-of-a-commit",
		}},
	} {
		t.Run(c.typ, func(t *testing.T) {
			g := NewWithT(t)
			srv := &contractServer{t: t, c: c.contract}
			api := httptest.NewServer(http.HandlerFunc(srv.serve))
			t.Cleanup(api.Close)
			sender := &notify.Sender{Policy: &notify.AddressPolicy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
				Retry: notify.Retry{Attempts: 1}}
			r := &Resolver{Sender: sender}
			provider := statusProvider(c.typ, "")
			deliver := func(ev eventv1.Event, token string) notify.Outcome {
				t.Helper()
				st, err := commitStatus(context.Background(), provider, &notificationv1beta3.Alert{}, ev)
				g.Expect(err).NotTo(HaveOccurred())
				target := notify.Target{Key: "apps/forge", Type: c.typ, URL: api.URL + c.repoPath, Token: []byte(token)}
				g.Expect(r.statusTarget(provider, &target, st.SHA)).To(Succeed())
				return sender.Deliver(context.Background(), target, Message{Event: ev, Status: st})
			}
			ctx := "kustomization/podinfo/0c9c2e41"

			out := deliver(applied, token)
			g.Expect(out.Err).NotTo(HaveOccurred())
			g.Expect(out.Status).To(Equal(http.StatusCreated))
			g.Expect(srv.bodies()).To(ConsistOf(HaveKeyWithValue(c.contract.nameKey, ctx)))
			g.Expect(srv.bodies()[0]).To(And(HaveKeyWithValue("state", "success"), HaveKeyWithValue("description", "reconciliation succeeded")))

			g.Expect(deliver(applied, token).Duplicate).To(BeTrue(), "the listed status is not posted again")
			g.Expect(srv.bodies()).To(HaveLen(1))

			failed := applied
			failed.Severity, failed.Reason = eventv1.EventSeverityError, "HealthCheckFailed"
			g.Expect(deliver(failed, token).Err).NotTo(HaveOccurred())
			g.Expect(srv.bodies()).To(HaveLen(2))
			g.Expect(srv.bodies()[1]).To(And(HaveKeyWithValue("state", c.failed), HaveKeyWithValue("description", "health check failed")))

			out = deliver(applied, "refused-token-s3cr3t")
			g.Expect(out.Err).To(MatchError("the endpoint answered 401 Unauthorized"))
			g.Expect(srv.bodies()).To(HaveLen(2))
		})
	}
}
