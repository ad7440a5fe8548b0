package controller

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
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
