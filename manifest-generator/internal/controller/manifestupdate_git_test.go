package controller

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// Two ManifestUpdates of one repository pushed at the same time both land, one after the other:
// the one that loses the race clones again and redoes its change on top of the other's commit.
func TestManifestUpdateConcurrentPushes(t *testing.T) {
	g := NewWithT(t)
	backend := strings.NewReplacer("podinfo", "backend", "ghcr.io/stefanprodan/backend", "ghcr.io/stefanprodan/backend").Replace(podinfoDeployment)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment, "apps/backend.yaml": backend})
	// The hook records every push ("<old> <new> <ref>") and holds it for a second, so both
	// updates push against the same tip.
	pushes := filepath.Join(t.TempDir(), "pushes")
	g.Expect(os.WriteFile(filepath.Join(f.repo.Dir, "hooks", "pre-receive"),
		[]byte("#!/bin/sh\ncat >> "+pushes+"\nsleep 1\n"), 0o755)).To(Succeed())

	first := f.createUpdate(t, imageUpdate)
	second := f.createUpdate(t, strings.NewReplacer("podinfo-6-1", "backend-2", "deployment/podinfo", "deployment/backend",
		"podinfo:6.1.0", "backend:2.0.0").Replace(imageUpdate))
	g.Eventually(updateReady(first), timeout).Should(HavePrefix("True|Committed|"))
	g.Eventually(updateReady(second), timeout).Should(HavePrefix("True|Committed|"))

	g.Expect(f.commitCount(t)).To(Equal("3"))
	log, err := os.ReadFile(pushes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(log), f.base+" ")).To(Equal(2), "both first pushes started from the same tip:\n%s", log)
	g.Expect(strings.Count(string(log), "\n")).To(Equal(3), "the loser pushed again:\n%s", log)
	g.Expect(git(t, f.repo.Dir, "rev-list", "--merges", "refs/heads/master")).To(BeEmpty(), "linear history")
	g.Expect(f.fileAtHead(t, "apps/podinfo.yaml")).To(ContainSubstring("image: ghcr.io/stefanprodan/podinfo:6.1.0"))
	g.Expect(f.fileAtHead(t, "apps/backend.yaml")).To(ContainSubstring("image: ghcr.io/stefanprodan/backend:2.0.0"))
	commits := git(t, f.repo.Dir, "rev-list", "refs/heads/master")
	g.Expect(commits).To(ContainSubstring(getUpdate(g, first).Status.Commit))
	g.Expect(commits).To(ContainSubstring(getUpdate(g, second).Status.Commit))
	for _, c := range []string{getUpdate(g, first).Status.Commit, getUpdate(g, second).Status.Commit} {
		g.Expect(strings.Fields(git(t, f.repo.Dir, "diff-tree", "--no-commit-id", "--name-only", "-r", c))).To(HaveLen(1), "each commit holds its own change only")
	}
}

// spec.git.branch: the commit goes to that branch, created from the source's branch, signed
// with the SSH key of spec.git.signingKey; the source branch is not written.
func TestManifestUpdateSignedCommitToBranch(t *testing.T) {
	g := NewWithT(t)
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen is needed to verify SSH commit signatures: install openssh-client (.ci/run does)")
	}
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	key := testserver.NewKeyPair(t, "")
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "signing"},
		Data: map[string][]byte{generatorv1.SigningKeySSHKey: key.PrivateKeyPEM}})).To(Succeed())

	update := f.createUpdate(t, imageUpdate+`  git:
    branch: flux/podinfo
    author:
      name: Release Bot
      email: bot@example.com
    signingKey:
      secretRef:
        name: signing
`)
	g.Eventually(updateReady(update), timeout).Should(HavePrefix("True|Committed|"))
	commit := getUpdate(g, update).Status.Commit
	g.Expect(git(t, f.repo.Dir, "rev-parse", "refs/heads/flux/podinfo")).To(Equal(commit))
	g.Expect(git(t, f.repo.Dir, "log", "-1", "--format=%P|%an <%ae>", commit)).To(Equal(f.base + "|Release Bot <bot@example.com>"))
	g.Expect(f.head(t)).To(Equal(f.base), "master is untouched")

	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	g.Expect(os.WriteFile(allowed, append([]byte("bot@example.com "), key.AuthorizedKey()...), 0o600)).To(Succeed())
	g.Expect(git(t, f.repo.Dir, "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+allowed,
		"verify-commit", "--raw", commit)).To(BeEmpty(), "verify-commit prints to stderr; success is the exit code")
}
