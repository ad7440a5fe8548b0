package testserver_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// stopRecorder is a testing.TB whose Fatal and Fatalf record the message and stop the goroutine,
// as the real ones do, so that a helper's failure can be checked.
type stopRecorder struct {
	testing.TB
	fatal string
}

func (r *stopRecorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *stopRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestNewGiteaFailsWithoutTheBinary(t *testing.T) {
	// A repository root (it holds go.work) whose bin/ has no gitea.
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.work"), []byte("go 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	rec := &stopRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testserver.NewGitea(rec)
	}()
	<-done
	NewWithT(t).Expect(rec.fatal).To(And(ContainSubstring("gitea"), ContainSubstring("run `make tools`")))
}

// delivery is a webhook request as a listener received it.
type delivery struct {
	event     string
	signedOK  bool
	payload   map[string]any
	signature string
}

// webhookListener is an httptest server on 127.0.0.1 that checks each delivery's
// X-Gitea-Signature (the hex HMAC-SHA256 of the body with secret) and passes it on.
func webhookListener(t *testing.T, secret string) (string, <-chan delivery) {
	ch := make(chan delivery, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		d := delivery{event: r.Header.Get("X-Gitea-Event"), signature: r.Header.Get("X-Gitea-Signature")}
		d.signedOK = hmac.Equal([]byte(d.signature), []byte(hex.EncodeToString(mac.Sum(nil))))
		if err := json.Unmarshal(body, &d.payload); err != nil {
			t.Errorf("webhook body is not JSON: %v: %s", err, body)
		}
		ch <- d
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", ch
}

// waitDelivery returns the first delivery of event for which match holds, within 20 s.
func waitDelivery(t *testing.T, ch <-chan delivery, event string, match func(map[string]any) bool) delivery {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case d := <-ch:
			if d.event == event && match(d.payload) {
				return d
			}
		case <-timeout:
			t.Fatalf("no %s webhook delivery matched within 20s", event)
		}
	}
}

// field reads a nested field of a JSON payload ("pull_request.user.login").
func field(payload map[string]any, path string) any {
	var v any = payload
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestGitea(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	forge := testserver.NewGitea(t)
	t.Logf("Gitea started with an administrator and its token in %v", time.Since(start).Round(time.Millisecond))
	// Gitea's `git config --global` went to a file of its own, not over GitEnv's /dev/null.
	null, err := os.Stat(os.DevNull)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(null.Mode() & os.ModeCharDevice).NotTo(BeZero())

	var version struct {
		Version string `json:"version"`
	}
	forge.API(t, forge.AdminToken(), http.MethodGet, "/version", nil, &version)
	g.Expect(version.Version).To(Equal("1.26.0"))
	g.Expect(forge.URL()).To(HavePrefix("http://127.0.0.1:"))

	var me struct {
		Login   string `json:"login"`
		IsAdmin bool   `json:"is_admin"`
	}
	forge.API(t, forge.AdminToken(), http.MethodGet, "/user", nil, &me)
	g.Expect(me.Login).To(Equal(testserver.GiteaAdmin))
	g.Expect(me.IsAdmin).To(BeTrue())

	alice := forge.CreateUser(t, "alice")
	forge.API(t, alice, http.MethodGet, "/user", nil, &me)
	g.Expect(me.Login).To(Equal("alice"))
	g.Expect(me.IsAdmin).To(BeFalse())

	forge.CreateOrg(t, "team")
	repo := forge.CreateRepo(t, "team", "app")
	g.Expect(repo.HTTPURL()).To(Equal(forge.URL() + "/team/app.git"))
	refs, err := lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("HEAD", "ref: refs/heads/main"))
	g.Expect(refs).To(HaveKey("refs/heads/main"))

	const secret = "hook-secret"
	hookURL, deliveries := webhookListener(t, secret)
	repo.AddWebhook(t, hookURL, secret, "push", "pull_request", "pull_request_label")

	// Commits through the contents API: create, update and delete, each a push webhook.
	first := repo.Commit(t, "main", "add the app", map[string]string{"deploy/app.yaml": "replicas: 1\n", "notes.txt": "n"})
	g.Expect(first).To(MatchRegexp(`^[0-9a-f]{40}$`))
	push := waitDelivery(t, deliveries, "push", func(p map[string]any) bool { return p["after"] == first })
	g.Expect(push.signature).To(MatchRegexp(`^[0-9a-f]{64}$`))
	g.Expect(push.signedOK).To(BeTrue(), "X-Gitea-Signature is the hex HMAC-SHA256 of the body")
	g.Expect(push.payload["ref"]).To(Equal("refs/heads/main"))

	second := repo.Commit(t, "main", "scale and drop the notes", map[string]string{"deploy/app.yaml": "replicas: 2\n", "notes.txt": ""})
	cloned, err := goGitClone(repo.HTTPURL(), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	head, err := cloned.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(second))
	g.Expect(readFile(t, cloned, "deploy/app.yaml")).To(Equal("replicas: 2\n"))
	wt, err := cloned.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wt.Filesystem.Stat("notes.txt")
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "notes.txt was deleted")

	// Branches and tags.
	repo.CreateBranch(t, "feature", "main")
	repo.CreateTag(t, "v1.0.0", first)
	feature := repo.Commit(t, "feature", "scale more", map[string]string{"deploy/app.yaml": "replicas: 3\n"})
	refs, err = lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/main", second))
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/feature", feature))
	g.Expect(refs).To(HaveKeyWithValue("refs/tags/v1.0.0", first))

	// A pull request opened by alice, labelled, unlabelled and merged.
	deploy := repo.CreateLabel(t, "deploy")
	g.Expect(deploy).To(BeNumerically(">", 0))
	repo.CreateLabel(t, "hold")
	repo.AddCollaborator(t, "alice", "write")
	pr := repo.As(alice).OpenPullRequest(t, "feature", "main", "Scale to three")
	g.Expect(pr).To(Equal(int64(1)))
	opened := waitDelivery(t, deliveries, "pull_request", func(p map[string]any) bool { return p["action"] == "opened" })
	g.Expect(opened.signedOK).To(BeTrue())
	g.Expect(field(opened.payload, "pull_request.user.login")).To(Equal("alice"))
	g.Expect(field(opened.payload, "pull_request.head.sha")).To(Equal(feature))

	repo.AddLabels(t, pr, "deploy", "hold")
	labelled := waitDelivery(t, deliveries, "pull_request", func(p map[string]any) bool {
		labels, _ := field(p, "pull_request.labels").([]any)
		return p["action"] == "label_updated" && len(labels) == 2
	})
	g.Expect(labelled.signedOK).To(BeTrue())
	repo.RemoveLabel(t, pr, "hold")
	var labels []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	forge.API(t, alice, http.MethodGet, "/repos/team/app/issues/1/labels", nil, &labels)
	g.Expect(labels).To(HaveLen(1))
	g.Expect(labels[0].Name).To(Equal("deploy"))
	g.Expect(labels[0].ID).To(Equal(deploy))

	merge := repo.MergePullRequest(t, pr)
	g.Expect(merge).To(MatchRegexp(`^[0-9a-f]{40}$`))
	refs, err = lsRemote(repo.HTTPURL(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(HaveKeyWithValue("refs/heads/main", merge))
	closed := waitDelivery(t, deliveries, "pull_request", func(p map[string]any) bool { return p["action"] == "closed" })
	g.Expect(field(closed.payload, "pull_request.merged")).To(Equal(true))

	// A pull request closed without merging.
	repo.CreateBranch(t, "dropped", "main")
	repo.Commit(t, "dropped", "not wanted", map[string]string{"deploy/app.yaml": "replicas: 9\n"})
	other := repo.OpenPullRequest(t, "dropped", "main", "Not wanted")
	repo.ClosePullRequest(t, other)
	var state struct {
		State  string `json:"state"`
		Merged bool   `json:"merged"`
		User   struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	forge.API(t, alice, http.MethodGet, fmt.Sprintf("/repos/team/app/pulls/%d", other), nil, &state)
	g.Expect(state.State).To(Equal("closed"))
	g.Expect(state.Merged).To(BeFalse())
	g.Expect(state.User.Login).To(Equal(testserver.GiteaAdmin))
}

func TestGiteaGitOverHTTPWithAToken(t *testing.T) {
	g := NewWithT(t)
	forge := testserver.NewGitea(t)
	bob := forge.CreateUser(t, "bob")
	repo := forge.CreateRepo(t, "bob", "own")
	g.Expect(repo.HTTPURL()).To(Equal(forge.URL() + "/bob/own.git"))

	// Clone and push with the git CLI, the token as the password.
	authed := strings.Replace(repo.HTTPURL(), "http://", "http://bob:"+bob+"@", 1)
	dir := t.TempDir()
	out, err := gitCLI(t, dir, nil, "clone", authed, "work")
	g.Expect(err).NotTo(HaveOccurred(), out)
	work := filepath.Join(dir, "work")
	g.Expect(os.WriteFile(filepath.Join(work, "a.txt"), []byte("a"), 0o644)).To(Succeed())
	for _, args := range [][]string{
		{"add", "a.txt"},
		{"-c", "user.name=Bob", "-c", "user.email=bob@example.com", "commit", "-m", "a"},
		{"push", "origin", "main"},
	} {
		out, err := gitCLI(t, work, nil, args...)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	pushed, err := gitCLI(t, work, nil, "rev-parse", "HEAD")
	g.Expect(err).NotTo(HaveOccurred())

	// The repository's owner acts through As; the contents API sees the pushed commit.
	sha := repo.As(bob).Commit(t, "main", "b", map[string]string{"b.txt": "b"})
	var commit struct {
		Parents []struct {
			SHA string `json:"sha"`
		} `json:"parents"`
		Author struct {
			Login string `json:"login"`
		} `json:"author"`
	}
	forge.API(t, bob, http.MethodGet, "/repos/bob/own/git/commits/"+sha, nil, &commit)
	g.Expect(commit.Parents).To(HaveLen(1))
	g.Expect(commit.Parents[0].SHA).To(Equal(pushed))
	g.Expect(commit.Author.Login).To(Equal("bob"))

	// Without the token, pushing (a new branch) is refused.
	out, err = gitCLI(t, work, nil, "push", repo.HTTPURL(), "HEAD:refs/heads/anonymous")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("could not read Username"))
}
