package testserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// GiteaRepo is a repository of a test Gitea. Its methods call Gitea's REST API with one user's
// token: the administrator's for the repository CreateRepo returns, another user's through As.
// That user is the author of what they create (commits, pull requests, labels, merges).
type GiteaRepo struct {
	g           *Gitea
	Owner, Name string
	token       string
}

// As returns the same repository acted on with another user's token (from CreateUser): what it
// creates (commits, pull requests) is that user's. The user needs the permission of what it does:
// to open a pull request between two of the repository's branches, as to write, Gitea wants a
// collaborator (AddCollaborator) or the owner.
func (r *GiteaRepo) As(token string) *GiteaRepo {
	c := *r
	c.token = token
	return &c
}

// AddCollaborator gives a user a permission on the repository: "read", "write" or "admin".
func (r *GiteaRepo) AddCollaborator(t testing.TB, user, permission string) {
	t.Helper()
	r.api(t, http.MethodPut, "/collaborators/"+user, map[string]string{"permission": permission}, nil)
}

// HTTPURL is the repository's clone URL over HTTP. Git authenticates with basic auth: a user
// name and that user's token as the password.
func (r *GiteaRepo) HTTPURL() string { return r.g.url + "/" + r.Owner + "/" + r.Name + ".git" }

func (r *GiteaRepo) api(t testing.TB, method, path string, body, out any) {
	t.Helper()
	r.g.API(t, r.token, method, "/repos/"+r.Owner+"/"+r.Name+path, body, out)
}

// Commit writes files (path -> content; "" content deletes the file, as Repo.Commit does) on an
// existing branch in one commit, through the contents API, and returns the commit's SHA. Gitea
// sends a push webhook for it as for a push.
func (r *GiteaRepo) Commit(t testing.TB, branch, message string, files map[string]string) (sha string) {
	t.Helper()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	ops := make([]map[string]string, 0, len(paths))
	for _, p := range paths {
		// Changing or deleting a file takes the SHA of its blob on the branch.
		op := map[string]string{"operation": "create", "path": p}
		blob, exists := r.blobSHA(t, branch, p)
		switch {
		case files[p] == "" && !exists:
			t.Fatalf("gitea: no %s on %s of %s/%s to delete", p, branch, r.Owner, r.Name)
		case files[p] == "":
			op["operation"], op["sha"] = "delete", blob
		case exists:
			op["operation"], op["sha"] = "update", blob
		}
		op["content"] = base64.StdEncoding.EncodeToString([]byte(files[p]))
		ops = append(ops, op)
	}
	var resp struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	r.api(t, http.MethodPost, "/contents", map[string]any{"branch": branch, "message": message, "files": ops}, &resp)
	if resp.Commit.SHA == "" {
		t.Fatalf("gitea: the commit to %s of %s/%s has no SHA", branch, r.Owner, r.Name)
	}
	return resp.Commit.SHA
}

// blobSHA returns the SHA of the blob of a file on a branch, and whether the file exists.
func (r *GiteaRepo) blobSHA(t testing.TB, branch, file string) (string, bool) {
	t.Helper()
	segments := strings.Split(file, "/")
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	path := fmt.Sprintf("/repos/%s/%s/contents/%s?ref=%s", r.Owner, r.Name, strings.Join(segments, "/"), url.QueryEscape(branch))
	status, answer, err := r.g.do(http.MethodGet, path, nil, bearer(r.token))
	if err == nil && status == http.StatusNotFound {
		return "", false
	}
	var content struct {
		Type string `json:"type"`
		SHA  string `json:"sha"`
	}
	if err == nil && status/100 != 2 {
		err = fmt.Errorf("%d %s", status, answer)
	}
	if err == nil {
		err = json.Unmarshal(answer, &content)
	}
	if err == nil && content.Type != "file" {
		err = fmt.Errorf("it is a %s", content.Type)
	}
	if err != nil {
		t.Fatalf("gitea: reading %s on %s of %s/%s: %v", file, branch, r.Owner, r.Name, err)
	}
	return content.SHA, true
}

// CreateBranch creates branch name at from (a branch, tag or commit SHA).
func (r *GiteaRepo) CreateBranch(t testing.TB, name, from string) {
	t.Helper()
	r.api(t, http.MethodPost, "/branches", map[string]string{"new_branch_name": name, "old_ref_name": from}, nil)
}

// CreateTag creates a lightweight tag name at target (a branch or commit SHA).
func (r *GiteaRepo) CreateTag(t testing.TB, name, target string) {
	t.Helper()
	r.api(t, http.MethodPost, "/tags", map[string]string{"tag_name": name, "target": target}, nil)
}

// CreateLabel creates a repository label and returns its ID.
func (r *GiteaRepo) CreateLabel(t testing.TB, name string) (id int64) {
	t.Helper()
	var label struct {
		ID int64 `json:"id"`
	}
	r.api(t, http.MethodPost, "/labels", map[string]string{"name": name, "color": "#1d76db"}, &label)
	return label.ID
}

// OpenPullRequest opens a pull request from branch head into base and returns its index (the
// number in its URL). Its author is the user whose token the repository is used with (As).
func (r *GiteaRepo) OpenPullRequest(t testing.TB, head, base, title string) (index int64) {
	t.Helper()
	var pr struct {
		Number int64 `json:"number"`
	}
	r.api(t, http.MethodPost, "/pulls", map[string]string{"head": head, "base": base, "title": title}, &pr)
	return pr.Number
}

// AddLabels adds existing labels, by name, to a pull request or issue.
func (r *GiteaRepo) AddLabels(t testing.TB, index int64, names ...string) {
	t.Helper()
	r.api(t, http.MethodPost, fmt.Sprintf("/issues/%d/labels", index), map[string]any{"labels": names}, nil)
}

// RemoveLabel removes a label, by name, from a pull request or issue.
func (r *GiteaRepo) RemoveLabel(t testing.TB, index int64, name string) {
	t.Helper()
	var labels []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	r.api(t, http.MethodGet, fmt.Sprintf("/issues/%d/labels", index), nil, &labels)
	for _, l := range labels {
		if l.Name == name {
			r.api(t, http.MethodDelete, fmt.Sprintf("/issues/%d/labels/%d", index, l.ID), nil, nil)
			return
		}
	}
	t.Fatalf("gitea: %s/%s#%d has no label %q", r.Owner, r.Name, index, name)
}

// ClosePullRequest closes a pull request without merging it.
func (r *GiteaRepo) ClosePullRequest(t testing.TB, index int64) {
	t.Helper()
	r.api(t, http.MethodPatch, fmt.Sprintf("/pulls/%d", index), map[string]string{"state": "closed"}, nil)
}

// MergePullRequest merges a pull request with a merge commit and returns that commit's SHA.
// Gitea checks whether a new pull request can be merged in the background: until it has, the
// merge is refused with "Please try again later", and is tried again for up to 30 s.
func (r *GiteaRepo) MergePullRequest(t testing.TB, index int64) (sha string) {
	t.Helper()
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d", r.Owner, r.Name, index)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, answer, err := r.g.do(http.MethodPost, path+"/merge", map[string]string{"Do": "merge"}, bearer(r.token))
		if err != nil {
			t.Fatalf("gitea: merging %s/%s#%d: %v", r.Owner, r.Name, index, err)
		}
		if status/100 == 2 {
			break
		}
		if status != http.StatusMethodNotAllowed || !strings.Contains(string(answer), "try again later") || time.Now().After(deadline) {
			t.Fatalf("gitea: merging %s/%s#%d: %d %s", r.Owner, r.Name, index, status, answer)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var pr struct {
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	r.g.API(t, r.token, http.MethodGet, path, nil, &pr)
	return pr.MergeCommitSHA
}

// AddWebhook adds a webhook of Gitea's own type posting JSON to url, signed with secret
// (X-Gitea-Signature: the hex HMAC-SHA256 of the body), for events (Gitea's names: "push",
// "create", "pull_request", "pull_request_label", "pull_request_sync", ...; "push" when none).
// Deliveries are asynchronous; the server allows loopback targets.
func (r *GiteaRepo) AddWebhook(t testing.TB, url, secret string, events ...string) {
	t.Helper()
	if len(events) == 0 {
		events = []string{"push"}
	}
	r.api(t, http.MethodPost, "/hooks", map[string]any{
		"type":   "gitea",
		"active": true,
		"events": events,
		"config": map[string]string{"url": url, "content_type": "json", "secret": secret},
	}, nil)
}

// GiteaStatus is a commit status as Gitea lists it.
type GiteaStatus struct {
	Context     string `json:"context"`
	State       string `json:"status"`
	Description string `json:"description"`
	Creator     struct {
		Login string `json:"login"`
	} `json:"creator"`
}

// Statuses lists the statuses of a commit, newest first, every one of them (Gitea keeps each
// status posted, also one equal to the one before).
func (r *GiteaRepo) Statuses(t testing.TB, sha string) []GiteaStatus {
	t.Helper()
	var out []GiteaStatus
	r.api(t, http.MethodGet, "/statuses/"+sha+"?sort=leastindex&limit=50", nil, &out)
	return out
}
