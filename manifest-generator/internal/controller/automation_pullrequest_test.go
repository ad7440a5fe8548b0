package controller

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

// giteaPull is what the test reads of a pull request on Gitea.
type giteaPull struct {
	Number int64  `json:"number"`
	State  string `json:"state"`
	Title  string `json:"title"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

// Releases proposed as pull requests, on the real Gitea: the first tag opens one from a branch
// derived from the workload, the next tag updates the same pull request (same branch, no
// duplicate), and a closed one is not reopened for its tag.
func TestAutomationProposesReleasesAsPullRequestsOnGitea(t *testing.T) {
	g := NewWithT(t)
	gitea := testserver.NewGitea(t)
	token := gitea.CreateUser(t, "releaser")
	repo := gitea.CreateRepo(t, "releaser", "fleet")
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"

	ns := tenantNamespace(t)
	manifest := strings.ReplaceAll(automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1"}), nsPlaceholder, ns)
	head := repo.As(token).Commit(t, "main", "Add podinfo", map[string]string{"apps/podinfo.yaml": manifest})
	createFleet(t, ns, repo.HTTPURL(), "main", "releaser", token)
	key := createGeneration(t, ns, `
metadata:
  name: apps
spec:
  sourceRef:
    kind: GitRepository
    name: fleet
  path: ./apps
  interval: 1h
  automation:
    interval: 1s
    insecure: true
    pullRequest:
      provider: gitea
`)
	publish(t, ns, "fleet", "main@sha1:"+head, map[string]string{"apps/podinfo.yaml": manifest})
	g.Eventually(automationStatus(key), timeout).Should(HaveLen(1))

	pulls := func(g Gomega) []giteaPull {
		var out []giteaPull
		gitea.API(t, token, http.MethodGet, "/repos/releaser/fleet/pulls?state=all", nil, &out)
		return out
	}
	branch := "sluice/apps/" + ns + "-deployment-podinfo-app"

	reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	g.Eventually(releases(ns), timeout).Should(HaveLen(1))
	first := releases(ns)(g)[0]
	g.Eventually(updateReady(client.ObjectKeyFromObject(&first)), timeout).Should(MatchRegexp(
		`^True\|Committed\|committed [0-9a-f]{40} to ` + branch + `, proposed in pull request #1 into main: .*/releaser/fleet/pulls/1$`))
	g.Expect(pulls(g)).To(ConsistOf(And(HaveField("Number", int64(1)), HaveField("State", "open"),
		HaveField("Head.Ref", branch), HaveField("Base.Ref", "main"),
		HaveField("Title", "Update "+ns+":deployment/podinfo container app to "+image+":1.1.0"))))
	g.Expect(getUpdate(g, client.ObjectKeyFromObject(&first)).Status.PullRequest).To(HaveField("Number", int64(1)))
	// The source's branch is untouched until the pull request is merged.
	var mainBranch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	gitea.API(t, token, http.MethodGet, "/repos/releaser/fleet/branches/main", nil, &mainBranch)
	g.Expect(mainBranch.Commit.ID).To(Equal(head))

	// A newer tag: the same branch, the same pull request, retitled.
	reg.PushImage(t, "apps/podinfo", "1.2.0", day.Add(2*time.Hour))
	g.Eventually(releases(ns), timeout).Should(HaveLen(2))
	var second generatorv1.ManifestUpdate
	for _, mu := range releases(ns)(g) {
		if mu.Name != first.Name {
			second = mu
		}
	}
	g.Eventually(updateReady(client.ObjectKeyFromObject(&second)), timeout).Should(HavePrefix("True|Committed|committed "))
	g.Expect(pulls(g)).To(ConsistOf(And(HaveField("Number", int64(1)), HaveField("State", "open"),
		HaveField("Title", "Update "+ns+":deployment/podinfo container app to "+image+":1.2.0"))))
	var file struct {
		Content string `json:"content"`
	}
	gitea.API(t, token, http.MethodGet, "/repos/releaser/fleet/contents/apps/podinfo.yaml?ref="+branch, nil, &file)
	content, err := base64.StdEncoding.DecodeString(file.Content)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(ContainSubstring("image: " + image + ":1.2.0"))

	// Closed by a reviewer: later scans find the same tag and do not propose it again.
	repo.As(token).ClosePullRequest(t, 1)
	g.Consistently(func(g Gomega) []giteaPull { return pulls(g) }, 4*time.Second).Should(ConsistOf(HaveField("State", "closed")))
	g.Expect(releases(ns)(g)).To(HaveLen(2))
}

// The forge a pull request is opened on is named by the tenant's GitRepository: its API is
// reached only at the addresses the controller's policy allows, as the registries are. This
// replays the class of Kargo's CVE-2026-32828 (a tenant's URL made the controller reach the
// cloud's metadata service and its own ports). Checked against a reintroduced bug: with the
// reconciler given a plain http.Client, the requests go out and this test fails.
func TestPullRequestsReachOnlyAllowedAddresses(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	createFleet(t, ns, "http://127.0.0.1:1/owner/fleet.git", "main", "bot", "token")
	r := &ManifestUpdateReconciler{Client: k8s, ForgeClient: &http.Client{Timeout: ForgeTimeout,
		Transport: imagescan.AddressPolicy{}.Transport()}}
	obj := &generatorv1.ManifestUpdate{}
	obj.Namespace, obj.Name = ns, "release"
	obj.Spec.GenerationRef.Name = "apps"
	obj.Spec.Workload = ns + ":deployment/podinfo"
	obj.Spec.PullRequest = &generatorv1.PullRequestSpec{Provider: generatorv1.PullRequestGitea}
	for _, url := range []string{"http://169.254.169.254/owner/fleet.git", "http://127.0.0.1:8080/owner/fleet.git", "http://[::1]:8443/owner/fleet.git"} {
		_, err := r.propose(context.Background(), obj, update.Target{URL: url, SecretName: "git-auth", Branch: "sluice/apps/x", Base: "main"}, "Release")
		g.Expect(err).To(MatchError(ContainSubstring("refusing to connect to")), url)
		g.Expect(err).To(MatchError(ContainSubstring("--external-service-allowed-cidrs")), url)
	}
}
