package fluxalerts

import (
	"context"
	"strings"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
)

const sha1Hex = "8a5e3b41b4cd6d4bfb7a3e9d6fd0f2c1e5a6b7c8"

var applied = eventv1.Event{
	InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "apps", Name: "Podinfo", APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
	Severity:       eventv1.EventSeverityInfo, Reason: "ReconciliationSucceeded", Message: "Reconciliation finished",
	Metadata: map[string]string{"revision": "main@sha1:" + sha1Hex},
}

func statusProvider(typ, expr string) *notificationv1beta3.Provider {
	return &notificationv1beta3.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "forge", UID: "0c9c2e41-4e81-4b0e-a7e3-5c3c0e9f1a2b"},
		Spec:       notificationv1beta3.ProviderSpec{Type: typ, CommitStatusExpr: expr},
	}
}

// The commit is read from each form of revision Flux's controllers write; what names no Git
// commit (an OCI tag, a chart version) is refused.
func TestCommitOf(t *testing.T) {
	g := NewWithT(t)
	sha256Hex := sha1Hex + "0123456789abcdef01234567"
	for rev, want := range map[string]string{
		"main@sha1:" + sha1Hex: sha1Hex, "sha1:" + sha1Hex: sha1Hex, "main/" + sha1Hex: sha1Hex, sha1Hex: sha1Hex,
		"refs/heads/feature/x@sha1:" + sha1Hex: sha1Hex, "main@sha256:" + sha256Hex: sha256Hex,
	} {
		got, err := commitOf(rev)
		g.Expect(err).NotTo(HaveOccurred(), rev)
		g.Expect(got).To(Equal(want), rev)
	}
	for _, rev := range []string{"6.5.0", "v1@md5:" + sha1Hex, "main@sha1:XYZ", "main@sha1:" + sha1Hex[:39], ""} {
		_, err := commitOf(rev)
		g.Expect(err).To(MatchError(ContainSubstring("names no Git commit")), rev)
	}
}

// The description is the reason in words, as Flux writes it.
func TestSplitWords(t *testing.T) {
	g := NewWithT(t)
	for reason, want := range map[string][]string{
		"ReconciliationSucceeded": {"Reconciliation", "Succeeded"},
		"HealthCheckFailed":       {"Health", "Check", "Failed"},
		"OCIArtifactPullFailed":   {"OCI", "Artifact", "Pull", "Failed"},
		"Progressing":             {"Progressing"},
		"ArtifactV2Failed":        {"Artifact", "V", "2", "Failed"},
	} {
		g.Expect(splitWords(reason)).To(Equal(want), reason)
	}
}

// Flux's status: its context is the object's kind and name and the first part of the Provider's
// UID, lowercase; its state by severity, pending while the object progresses, in each forge's
// words.
func TestCommitStatusOfEvent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	st, err := commitStatus(ctx, statusProvider("gitea", ""), &notificationv1beta3.Alert{}, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*st).To(Equal(CommitStatus{SHA: sha1Hex, Context: "kustomization/podinfo/0c9c2e41", State: "success", Description: "reconciliation succeeded"}))

	failed := applied
	failed.Severity, failed.Reason = eventv1.EventSeverityError, "HealthCheckFailed"
	progressing := applied
	progressing.Reason = "Progressing"
	for typ, want := range map[string][2]string{"gitea": {"failure", "pending"}, "github": {"failure", "pending"}, "gitlab": {"failed", "running"}} {
		st, err := commitStatus(ctx, statusProvider(typ, ""), &notificationv1beta3.Alert{}, failed)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.State).To(Equal(want[0]), typ)
		g.Expect(st.Description).To(Equal("health check failed"))
		st, err = commitStatus(ctx, statusProvider(typ, ""), &notificationv1beta3.Alert{}, progressing)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.State).To(Equal(want[1]), typ)
	}

	noRevision := applied
	noRevision.Metadata = map[string]string{"token": "x"}
	_, err = commitStatus(ctx, statusProvider("github", ""), &notificationv1beta3.Alert{}, noRevision)
	g.Expect(err).To(MatchError(errNoRevision))
}

// commitStatusExpr names the context from the event, the Alert and the Provider, as in Flux; an
// expression that does not compile, fails or returns nothing is an error naming the Provider.
func TestCommitStatusExpr(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	alert := &notificationv1beta3.Alert{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: notificationv1beta3.AlertSpec{EventMetadata: map[string]string{"cluster": "eu-1"}}}
	received := applied
	received.Metadata = map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:" + sha1Hex}
	ev := withMetadata(alert, received)
	st, err := commitStatus(ctx, statusProvider("github", "event.involvedObject.kind + '/' + event.metadata.cluster + '/' + alert.metadata.name + '/' + provider.spec.type"), alert, ev)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Context).To(Equal("Kustomization/eu-1/prod/github"))

	// The example of docs/providers.md.
	st, err = commitStatus(ctx, statusProvider("github",
		"(event.involvedObject.kind + '/' + event.involvedObject.name + '/' + event.metadata.cluster).lowerAscii()"), alert, ev)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Context).To(Equal("kustomization/podinfo/eu-1"))

	// A tenant's expression is bounded: its length, its time, its result's length.
	_, err = commitStatus(ctx, statusProvider("github", "'"+strings.Repeat("x", 5000)+"'"), alert, ev)
	g.Expect(err).To(MatchError("Provider 'forge': spec.commitStatusExpr: the CEL expression is 5002 code points long, more than 4096"))
	ten := "[0,1,2,3,4,5,6,7,8,9]"
	slow := "string(" + ten + ".map(a, " + ten + ".map(b, " + ten + ".map(c, " + ten + ".map(d, " + ten + ".map(e, " + ten + ".map(f, " + ten + ".map(h, " + ten + ".map(i, i)))))))).size())"
	start := time.Now()
	_, err = commitStatus(ctx, statusProvider("github", slow), alert, ev)
	g.Expect(err).To(MatchError(ContainSubstring("cost limit exceeded")), "10^8 iterations are stopped")
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
	_, err = commitStatus(ctx, statusProvider("github", "'"+strings.Repeat("x", 300)+"'"), alert, ev)
	g.Expect(err).To(MatchError(ContainSubstring("returned 300 bytes, more than the 255 a context may have")))

	_, err = commitStatus(ctx, statusProvider("github", "event.nope("), alert, ev)
	g.Expect(err).To(MatchError(ContainSubstring("Provider 'forge': spec.commitStatusExpr: the CEL expression 'event.nope(' does not compile")))
	_, err = commitStatus(ctx, statusProvider("github", "event.metadata.missing"), alert, ev)
	g.Expect(err).To(MatchError(ContainSubstring("Provider 'forge': spec.commitStatusExpr")))
	_, err = commitStatus(ctx, statusProvider("github", "''"), alert, ev)
	g.Expect(err).To(MatchError("Provider 'forge': spec.commitStatusExpr returned an empty string"))
}

// Each forge gets its own body; a forge's list says whether the newest status of the context
// has the state and description already.
func TestCommitStatusBodies(t *testing.T) {
	g := NewWithT(t)
	st := &CommitStatus{SHA: sha1Hex, Context: "kustomization/podinfo/0c9c2e41", State: "success", Description: "reconciliation succeeded"}
	for _, typ := range []string{"gitea", "github"} {
		body, err := Message{Status: st}.Body(typ)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(body).To(MatchJSON(`{"state":"success","context":"kustomization/podinfo/0c9c2e41","description":"reconciliation succeeded","target_url":""}`))
	}
	body, err := Message{Status: st}.Body("gitlab")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(MatchJSON(`{"state":"success","name":"kustomization/podinfo/0c9c2e41","description":"reconciliation succeeded"}`))
	_, err = Message{}.Body("gitea")
	g.Expect(err).To(HaveOccurred(), "no status, no body")

	m := Message{Status: st}
	g.Expect(m.Delivered([]byte(`[{"context":"other","state":"failure","description":"x"},
		{"context":"kustomization/podinfo/0c9c2e41","state":"success","description":"reconciliation succeeded"}]`))).To(BeTrue(), "GitHub's list")
	g.Expect(m.Delivered([]byte(`[{"context":"kustomization/podinfo/0c9c2e41","status":"success","description":"reconciliation succeeded"}]`))).To(BeTrue(), "Gitea's list")
	g.Expect(m.Delivered([]byte(`[{"name":"kustomization/podinfo/0c9c2e41","status":"success","description":"reconciliation succeeded"}]`))).To(BeTrue(), "GitLab's list")
	g.Expect(m.Delivered([]byte(`[{"context":"kustomization/podinfo/0c9c2e41","state":"failure","description":"health check failed"},
		{"context":"kustomization/podinfo/0c9c2e41","state":"success","description":"reconciliation succeeded"}]`))).To(BeFalse(), "only the newest counts")
	g.Expect(m.Delivered([]byte(`{"message":"Not Found"}`))).To(BeFalse())
	g.Expect(Message{}.Delivered([]byte(`[]`))).To(BeFalse())
}

// The forges' APIs from a repository's address: Gitea under a sub-path, GitHub and GitHub
// Enterprise Server, GitLab's nested groups; SSH forms are read as https.
func TestCommitStatusAPI(t *testing.T) {
	g := NewWithT(t)
	giteaList := "/statuses/" + sha1Hex + "?sort=leastindex&limit=50"
	gitHubList := "/commits/" + sha1Hex + "/statuses?per_page=50"
	for _, c := range []struct{ typ, address, repo, post, list string }{
		{"gitea", "https://git.example.com/team/app", "https://git.example.com/api/v1/repos/team/app", "/statuses/" + sha1Hex, giteaList},
		{"gitea", "https://example.com/gitea/team/app.git", "https://example.com/gitea/api/v1/repos/team/app", "/statuses/" + sha1Hex, giteaList},
		{"gitea", "ssh://git@git.example.com:2222/team/app.git", "https://git.example.com/api/v1/repos/team/app", "/statuses/" + sha1Hex, giteaList},
		{"github", "https://github.com/org/app", "https://api.github.com/repos/org/app", "/statuses/" + sha1Hex, gitHubList},
		{"github", "git@github.com:org/app.git", "https://api.github.com/repos/org/app", "/statuses/" + sha1Hex, gitHubList},
		{"github", "https://ghe.example.com/org/app/", "https://ghe.example.com/api/v3/repos/org/app", "/statuses/" + sha1Hex, gitHubList},
	} {
		api, err := commitStatusAPI(c.typ, c.address, sha1Hex, []byte("t"))
		g.Expect(err).NotTo(HaveOccurred(), c.address)
		g.Expect(api.post).To(Equal(c.repo+c.post), c.address)
		g.Expect(api.list).To(Equal(c.repo+c.list), c.address)
	}
	api, err := commitStatusAPI("gitlab", "https://gitlab.example.com/group/sub/app", sha1Hex, []byte("glpat-x"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(api.post).To(Equal("https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fapp/statuses/" + sha1Hex))
	g.Expect(api.list).To(Equal("https://gitlab.example.com/api/v4/projects/group%2Fsub%2Fapp/repository/commits/" + sha1Hex + "/statuses?per_page=100"))
	g.Expect(api.headers).To(Equal(map[string]string{"PRIVATE-TOKEN": "glpat-x"}))

	for _, c := range []struct{ typ, address string }{
		{"github", "https://github.com/org"}, {"github", "https://github.com/org/app/tree"}, {"gitea", "https://git.example.com/app"},
		{"gitlab", "https://gitlab.example.com/"}, {"gitea", "ftp://x/team/app"}, {"gitea", "https://x/team/../app"},
		{"github", "https://github.com/org/app?token=s3cr3t"}, {"gitea", "not a url"}, {"slack", "https://x/team/app"},
	} {
		_, err := commitStatusAPI(c.typ, c.address, sha1Hex, nil)
		g.Expect(err).To(HaveOccurred(), c.address)
		g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
	}
}
