package controller

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// GitBranch and GitTag list any Git server by ls-remote with a GitRepository's Secret: here the
// real Git server over SSH (identity and known_hosts) and over HTTP (basic auth), filtered by
// spec.filter, with spec.defaultValues merged in.
func TestInputProviderGitBranchAndTag(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	srv := testserver.NewGitServer(t, testserver.Options{Username: "git-user", Password: "git-pass-7c1e", SSH: true})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "first", map[string]string{"a.txt": "1"})
	repo.Tag(t, "v1.0.0", false)
	repo.Branch(t, "feat/one")
	one := repo.Commit(t, "one", map[string]string{"a.txt": "2"})
	v11 := repo.Tag(t, "v1.1.0", true)
	repo.Branch(t, "fix/two")

	rsipSecret(t, ns, "git-ssh", corev1.SecretTypeOpaque, map[string][]byte{
		"identity": srv.Identity().PrivateKeyPEM, "known_hosts": srv.KnownHosts(),
	})
	branches := client.ObjectKeyFromObject(rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: branches
spec:
  type: GitBranch
  url: %s
  secretRef:
    name: git-ssh
  filter:
    includeBranch: "^feat/"
  defaultValues:
    env: preview
`, repo.SSHURL())))
	g.Expect(rsipInputs(g, rsipReady(t, branches))).To(Equal([]map[string]any{
		{"id": inputs.ID("feat/one"), "branch": "feat/one", "sha": one, "env": "preview"},
	}))

	rsipSecret(t, ns, "git-basic", corev1.SecretTypeOpaque, map[string][]byte{
		"username": []byte("git-user"), "password": []byte("git-pass-7c1e"),
	})
	tags := client.ObjectKeyFromObject(rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: tags
spec:
  type: GitTag
  url: %s
  secretRef:
    name: git-basic
  filter:
    semver: ">=1.1.0"
`, repo.HTTPURL())))
	g.Expect(rsipInputs(g, rsipReady(t, tags))).To(Equal([]map[string]any{
		{"id": inputs.ID("v1.1.0"), "tag": "v1.1.0", "sha": v11},
	}))

	// Without the Secret's password the server refuses, the provider says so, and nothing is
	// exported; the password is never logged.
	noAuth := client.ObjectKeyFromObject(rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: anonymous
spec:
  type: GitTag
  url: %s
`, repo.HTTPURL())))
	g.Expect(rsipFailed(t, noAuth)).To(ContainSubstring("authentication required"))
	g.Expect(rsipGet(g, noAuth).Status.ExportedInputs).To(BeEmpty())
	rsipLogsFree(t, "git-pass-7c1e")
}
