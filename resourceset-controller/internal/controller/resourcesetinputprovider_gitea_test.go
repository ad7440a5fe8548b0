package controller

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// A GiteaPullRequest provider against a real Gitea exports the open, labelled pull requests
// with flux-operator's keys and the default values; when the forge refuses it later (a revoked
// token), it says so and keeps what it exported, and the token never reaches the logs.
func TestInputProviderGiteaPullRequestKeepsInputsOnFailure(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	gitea := testserver.NewGitea(t)
	repo := gitea.CreateRepo(t, testserver.GiteaAdmin, "app")
	repo.CreateBranch(t, "feat/x", "main")
	sha := repo.Commit(t, "feat/x", "x", map[string]string{"x.txt": "x"})
	repo.CreateLabel(t, "preview")
	pr := repo.OpenPullRequest(t, "feat/x", "main", "Feature X")
	repo.AddLabels(t, pr, "preview")
	repo.OpenPullRequest(t, "main", "feat/x", "Not labelled")

	secret := rsipSecret(t, ns, "gitea", corev1.SecretTypeOpaque, map[string][]byte{"password": []byte(gitea.AdminToken())})
	key := client.ObjectKeyFromObject(rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: previews
spec:
  type: GiteaPullRequest
  url: %s/%s/app
  secretRef:
    name: gitea
  filter:
    labels: [preview]
  defaultValues:
    env: preview
`, gitea.URL(), testserver.GiteaAdmin)))
	want := []map[string]any{{
		"id": strconv.FormatInt(pr, 10), "sha": sha, "branch": "feat/x", "title": "Feature X",
		"author": testserver.GiteaAdmin, "labels": []any{"preview"}, "env": "preview",
	}}
	exported := rsipReady(t, key)
	g.Expect(rsipInputs(g, exported)).To(Equal(want))

	secret.Data["password"] = []byte("revoked-0c5e1d")
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	poke(t, exported)
	g.Expect(rsipFailed(t, key)).To(ContainSubstring("401 Unauthorized: authentication failed: check the token of spec.secretRef"))
	g.Expect(rsipInputs(g, rsipGet(g, key))).To(Equal(want))
	rsipLogsFree(t, gitea.AdminToken(), "revoked-0c5e1d")
}
