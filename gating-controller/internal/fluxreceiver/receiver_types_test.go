package fluxreceiver

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// senderCase is a delivery of one sender: good is the request its sender makes with the token,
// bad the same request without it (or with a signature another key made); badCode is the answer
// to bad.
type senderCase struct {
	typ       string
	events    []string
	body      []byte
	good, bad func(body []byte) map[string]string
	badCode   int
}

// The push that every forge case delivers: to main of git.example.com/team/app.
var (
	pushGitHub = githubPush("git.example.com", "team/app", "refs/heads/main")
	pushGitLab = mustJSON(map[string]any{
		"object_kind": "push", "ref": "refs/heads/main",
		"project": map[string]any{"git_http_url": "https://git.example.com/team/app.git",
			"git_ssh_url": "git@git.example.com:team/app.git", "default_branch": "main"},
	})
	pushBitbucket = mustJSON(map[string]any{
		"eventKey": "repo:refs_changed",
		"changes":  []any{map[string]any{"ref": map[string]any{"id": "refs/heads/main", "displayId": "main", "type": "BRANCH"}}},
		"repository": map[string]any{"links": map[string]any{"clone": []any{
			map[string]any{"href": "https://git.example.com/team/app.git", "name": "http"},
			map[string]any{"href": "ssh://git@git.example.com:7999/team/app.git", "name": "ssh"}}}},
	})
)

func senderCases(token string) []senderCase {
	sig := func(header, prefix string, h func(string, []byte) string) func([]byte) map[string]string {
		return func(body []byte) map[string]string { return map[string]string{header: prefix + h(token, body)} }
	}
	wrong := func(header, prefix string, h func(string, []byte) string) func([]byte) map[string]string {
		return func(body []byte) map[string]string {
			return map[string]string{header: prefix + h("not-the-token", body)}
		}
	}
	s1 := func(k string, b []byte) string { return mac(sha1Hash, k, b) }
	s256 := func(k string, b []byte) string { return mac(sha256Hash, k, b) }
	s512 := func(k string, b []byte) string { return mac(sha512Hash, k, b) }
	with := func(extra map[string]string, f func([]byte) map[string]string) func([]byte) map[string]string {
		return func(body []byte) map[string]string {
			h := f(body)
			for k, v := range extra {
				h[k] = v
			}
			return h
		}
	}
	headers := func(h map[string]string) func([]byte) map[string]string {
		return func([]byte) map[string]string { return h }
	}
	githubPushEvent := map[string]string{"X-GitHub-Event": "push"}
	giteaPushEvent := map[string]string{"X-Gitea-Event": "push"}
	return []senderCase{
		{typ: "generic-hmac", body: pushGitHub, good: sig("X-Signature", "sha256=", s256), bad: wrong("X-Signature", "sha256=", s256), badCode: 401},
		{typ: "generic-hmac", body: pushGitHub, good: sig("X-Signature", "sha1=", s1), bad: headers(map[string]string{}), badCode: 401},
		{typ: "generic-hmac", body: pushGitHub, good: sig("X-Signature", "sha512=", s512), bad: sig("X-Signature", "md5=", s256), badCode: 401},
		{typ: "github", events: []string{"push"}, body: pushGitHub,
			good: with(githubPushEvent, sig("X-Hub-Signature-256", "sha256=", s256)),
			bad:  with(githubPushEvent, wrong("X-Hub-Signature-256", "sha256=", s256)), badCode: 401},
		{typ: "github", events: []string{"PUSH"}, body: pushGitHub,
			good: with(githubPushEvent, sig("X-Hub-Signature", "sha1=", s1)),
			bad:  headers(githubPushEvent), badCode: 401},
		{typ: "gitea", events: []string{"push"}, body: pushGitHub,
			good: with(giteaPushEvent, sig("X-Gitea-Signature", "", s256)),
			bad:  with(giteaPushEvent, wrong("X-Gitea-Signature", "", s256)), badCode: 401},
		{typ: "gitlab", events: []string{"Push Hook"}, body: pushGitLab,
			good: headers(map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"}),
			bad:  headers(map[string]string{"X-Gitlab-Token": token + "x", "X-Gitlab-Event": "Push Hook"}), badCode: 401},
		{typ: "bitbucket", events: []string{"repo:refs_changed"}, body: pushBitbucket,
			good: with(map[string]string{"X-Event-Key": "repo:refs_changed"}, sig("X-Hub-Signature", "sha256=", s256)),
			bad:  with(map[string]string{"X-Event-Key": "repo:refs_changed"}, wrong("X-Hub-Signature", "sha256=", s256)), badCode: 401},
		{typ: "harbor", body: mustJSON(map[string]any{"type": "PUSH_ARTIFACT"}),
			good: headers(map[string]string{"Authorization": token}),
			bad:  headers(map[string]string{"Authorization": "Bearer " + token}), badCode: 401},
		{typ: "nexus", body: mustJSON(map[string]any{"action": "CREATED", "repositoryName": "charts"}),
			good: sig("X-Nexus-Webhook-Signature", "", s1), bad: wrong("X-Nexus-Webhook-Signature", "", s1), badCode: 401},
		// Types without credentials (the path is the secret, as in Flux): a body that is not their
		// payload is refused.
		{typ: "generic", body: []byte(`anything`), good: headers(map[string]string{}), bad: nil},
		{typ: "dockerhub", body: mustJSON(map[string]any{"push_data": map[string]any{"tag": "v1"}, "repository": map[string]any{"repo_url": "https://hub.docker.com/r/team/app"}}),
			good: headers(map[string]string{}), bad: headers(map[string]string{}), badCode: 400},
		{typ: "quay", body: mustJSON(map[string]any{"docker_url": "quay.io/team/app", "updated_tags": []string{"v1"}}),
			good: headers(map[string]string{}), bad: headers(map[string]string{}), badCode: 400},
		{typ: "acr", body: mustJSON(map[string]any{"action": "push", "target": map[string]any{"repository": "app", "tag": "v1"}}),
			good: headers(map[string]string{}), bad: headers(map[string]string{}), badCode: 400},
	}
}

// Every type takes the deliveries its sender signs with the token (200, the GitRepository of the
// pushed repository and branch asked to reconcile) and refuses the others (401; 400 for a
// registry payload that does not decode), asking nothing.
func TestReceiverTypesAuthenticate(t *testing.T) {
	const token = "types-token-7f3a"
	for i, tc := range senderCases(token) {
		t.Run(fmt.Sprintf("%s-%d", tc.typ, i), func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			newGitRepository(t, ns, "app", "https://git.example.com/team/app", map[string]any{"branch": "main"})
			path := newReceiver(t, ns, "hook", tc.typ, token, []notificationv1.ReceiverResource{resource("GitRepository", "app")},
				func(r *notificationv1.Receiver) { r.Spec.Events = tc.events })

			if tc.bad != nil {
				body := tc.body
				if tc.badCode == 400 {
					body = []byte(`{"push_data": "not an object", "updated_tags": "v1", "target": 3}`)
				}
				code, msg := post(t, path, body, tc.bad(body))
				g.Expect(code).To(Equal(tc.badCode), msg)
				g.Consistently(requestedAt(gitRepositoryGVK, ns, "app"), time.Second).Should(BeEmpty())
			}
			code, msg := post(t, path, tc.body, tc.good(tc.body))
			g.Expect(code).To(Equal(200), msg)
			g.Expect(msg).To(Equal("reconciliation requested for 1 object"))
			g.Expect(requestedAt(gitRepositoryGVK, ns, "app")(g)).NotTo(BeEmpty())
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
