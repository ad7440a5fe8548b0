package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A repository behind basic auth: the artifact is the tree of the branch, downloadable from its
// URL with the digest of the status; a new commit gives a new artifact and revision.
func TestGitRepositoryFetchesOverHTTPWithBasicAuth(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := server.NewRepo(t, "podinfo")
	first := repo.Commit(t, "Initial commit", map[string]string{
		"deploy/app.yaml": "kind: ConfigMap\n", "README.md": "podinfo\n", ".flux.yaml": "version: 1\n",
	})
	createSecret(t, ns, "git-auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
	key := createRepo(t, ns, "podinfo", sourcev1.GitRepositorySpec{
		URL: repo.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "git-auth"},
	})

	g.Eventually(condition(key, meta.ReadyCondition), timeout).
		Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + first + "'"))
	obj := getRepo(g, key)
	g.Expect(obj.Status.Artifact.Path).To(Equal("gitrepository/" + ns + "/podinfo/" + first + ".tar.gz"))
	g.Expect(obj.Status.Artifact.URL).To(HaveSuffix("/gitrepository/" + ns + "/podinfo/" + first + ".tar.gz"))
	g.Expect(obj.Status.Artifact.Digest).To(HavePrefix("sha256:"))
	g.Expect(*obj.Status.Artifact.Size).To(BeNumerically(">", 0))
	g.Expect(obj.Status.Artifact.Metadata).To(Equal(map[string]string{
		"source.toolkit.fluxcd.io/author": `"Sluice Test" <test@sluice.invalid>`,
	}), "the commit's author, for the gates that refuse a revision's self-approval")
	g.Expect(fetchArtifact(t, key)).To(Equal(map[string]string{
		"deploy/app.yaml": "kind: ConfigMap\n", "README.md": "podinfo\n", ".flux.yaml": "version: 1\n",
	}))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal NewArtifact: stored artifact for commit 'Initial commit'"))

	repo.Author = testserver.Identity{Name: "Ana", Email: "ana@example.com"}
	second := repo.Commit(t, "Scale up", map[string]string{"deploy/app.yaml": "kind: Deployment\n"})
	poke(t, key)
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + second))
	g.Expect(getRepo(g, key).Status.Artifact.Metadata).To(HaveKeyWithValue("source.toolkit.fluxcd.io/author", `"Ana" <ana@example.com>`))
	g.Expect(fetchArtifact(t, key)["deploy/app.yaml"]).To(Equal("kind: Deployment\n"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal NewArtifact: stored artifact for commit 'Scale up'"))
}

// Each kind of reference resolves to the commit and revision format of the Flux source API.
func TestGitRepositoryReferences(t *testing.T) {
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "refs")
	c1 := repo.Commit(t, "one", map[string]string{"v": "1"})
	repo.Tag(t, "v1.0.0", false)
	c2 := repo.Commit(t, "two", map[string]string{"v": "2"})
	repo.Tag(t, "v1.1.0", true)
	repo.Tag(t, "v2.0.0-rc.1", false)
	repo.Branch(t, "feature")
	c3 := repo.Commit(t, "three", map[string]string{"v": "3"})

	for _, tc := range []struct {
		name     string
		ref      *sourcev1.GitRepositoryRef
		revision string
		content  string
	}{
		{"default branch", nil, "master@sha1:" + c2, "2"},
		{"branch", &sourcev1.GitRepositoryRef{Branch: "feature"}, "feature@sha1:" + c3, "3"},
		{"lightweight tag", &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, "v1.0.0@sha1:" + c1, "1"},
		{"annotated tag", &sourcev1.GitRepositoryRef{Tag: "v1.1.0"}, "v1.1.0@sha1:" + c2, "2"},
		{"semver", &sourcev1.GitRepositoryRef{SemVer: "~1"}, "v1.1.0@sha1:" + c2, "2"},
		{"semver over tag", &sourcev1.GitRepositoryRef{SemVer: "1.0.x", Tag: "v1.1.0"}, "v1.0.0@sha1:" + c1, "1"},
		{"name", &sourcev1.GitRepositoryRef{Name: "refs/heads/feature"}, "refs/heads/feature@sha1:" + c3, "3"},
		{"commit", &sourcev1.GitRepositoryRef{Commit: c1}, "sha1:" + c1, "1"},
		{"commit on branch", &sourcev1.GitRepositoryRef{Branch: "feature", Commit: c2}, "feature@sha1:" + c2, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			key := createRepo(t, ns, strings.ReplaceAll(tc.name, " ", "-"), sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: tc.ref})
			g.Eventually(revision(key), timeout).Should(Equal(tc.revision))
			g.Expect(fetchArtifact(t, key)["v"]).To(Equal(tc.content))
		})
	}
}

// Over SSH with the identity and the host's known_hosts line.
func TestGitRepositoryFetchesOverSSH(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{SSH: true})
	repo := server.NewRepo(t, "ssh-repo")
	sha := repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "a"})
	createSecret(t, ns, "ssh-auth", map[string][]byte{
		"identity": server.Identity().PrivateKeyPEM, "known_hosts": server.KnownHosts(),
	})
	key := createRepo(t, ns, "ssh", sourcev1.GitRepositorySpec{URL: repo.SSHURL(), SecretRef: &meta.LocalObjectReference{Name: "ssh-auth"}})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + sha))

	// A known_hosts that does not match the server's key is refused.
	other := testserver.NewGitServer(t, testserver.Options{SSH: true})
	createSecret(t, ns, "wrong-host", map[string][]byte{
		"identity":    server.Identity().PrivateKeyPEM,
		"known_hosts": []byte(strings.Replace(string(other.KnownHosts()), other.SSHAddr(), server.SSHAddr(), 1)),
	})
	bad := createRepo(t, ns, "ssh-wrong-host", sourcev1.GitRepositorySpec{URL: repo.SSHURL(), SecretRef: &meta.LocalObjectReference{Name: "wrong-host"}})
	g.Eventually(condition(bad, sourcev1.FetchFailedCondition), timeout).Should(HavePrefix("True|AuthenticationFailed|"))

	// known_hosts is required.
	createSecret(t, ns, "no-known-hosts", map[string][]byte{"identity": server.Identity().PrivateKeyPEM})
	none := createRepo(t, ns, "ssh-no-known-hosts", sourcev1.GitRepositorySpec{URL: repo.SSHURL(), SecretRef: &meta.LocalObjectReference{Name: "no-known-hosts"}})
	g.Eventually(condition(none, sourcev1.FetchFailedCondition), timeout).
		Should(Equal("True|AuthenticationFailed|invalid credentials: ssh needs the 'known_hosts' key in the Secret"))
}

// An unchanged remote is a no-op: no clone, no new artifact.
func TestGitRepositoryNoOpWhenUnchanged(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "same")
	repo.Commit(t, "Initial commit", map[string]string{"a": "a"})
	key := createRepo(t, ns, "same", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	before := getRepo(g, key).Status.Artifact.DeepCopy()

	time.Sleep(1100 * time.Millisecond) // a rebuild would have a later lastUpdateTime
	poke(t, key)
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	g.Expect(getRepo(g, key).Status.Artifact).To(Equal(before))
}

// Default exclusions, .sourceignore and spec.ignore apply; .flux.yaml is always kept.
func TestGitRepositoryIgnoreRules(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "ignore")
	repo.Commit(t, "files", map[string]string{
		"apps/a.yaml":          "a",
		"apps/secret.txt":      "s",
		"apps/.sourceignore":   "*.txt\n",
		"docs/guide.md":        "d",
		".github/workflow.yml": "w",
		"clusters/.flux.yaml":  "version: 1\n",
		"clusters/prod.yaml":   "p",
	})
	ignore := "/docs/\n*.yaml\n"
	key := createRepo(t, ns, "ignore", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Ignore: &ignore})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	files := fetchArtifact(t, key)
	g.Expect(files).To(HaveKey("clusters/.flux.yaml"))
	g.Expect(files).To(HaveKey("apps/.sourceignore"))
	g.Expect(files).NotTo(HaveKey("apps/secret.txt"))
	g.Expect(files).NotTo(HaveKey("docs/guide.md"))
	g.Expect(files).NotTo(HaveKey(".github/workflow.yml"))
	g.Expect(files).NotTo(HaveKey("clusters/prod.yaml"))
	g.Expect(getRepo(g, key).Status.ObservedIgnore).To(Equal(&ignore))
}

// Old artifacts are collected beyond --artifact-retention-records; deleting the object deletes
// its directory.
func TestGitRepositoryGarbageCollection(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "gc")
	key := createRepo(t, ns, "gc", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	for i := range 4 {
		sha := repo.Commit(t, "commit", map[string]string{"n": strings.Repeat("x", i+1)})
		poke(t, key)
		g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + sha))
	}
	poke(t, key) // the collection runs at the start of a reconcile
	g.Eventually(func() []string { return storedFiles(t, key) }, timeout).Should(HaveLen(2))
	g.Expect(storedFiles(t, key)).To(ContainElement(strings.TrimPrefix(getRepo(g, key).Status.Artifact.Path, "gitrepository/"+ns+"/gc/")))

	before := len(logs.Lines())
	g.Expect(k8s.Delete(context.Background(), getRepo(g, key))).To(Succeed())
	g.Eventually(func() []string { return storedFiles(t, key) }, timeout).Should(BeEmpty())
	g.Eventually(func() error {
		return k8s.Get(context.Background(), key, &sourcev1.GitRepository{})
	}, timeout).Should(MatchError(ContainSubstring("not found")))
	// The status of an object gone with its finalizer is not an error to log or retry.
	g.Consistently(func() []string {
		var errs []string
		for _, l := range logs.Lines()[before:] {
			if strings.Contains(l, "Reconciler error") && strings.Contains(l, `"namespace":"`+ns+`"`) {
				errs = append(errs, l)
			}
		}
		return errs
	}, time.Second).Should(BeEmpty())
}

// storedFiles lists the artifact files (not links) in the object's storage directory.
func storedFiles(t *testing.T, key client.ObjectKey) []string {
	entries, err := os.ReadDir(filepath.Join(storageDir, "gitrepository", key.Namespace, key.Name))
	if os.IsNotExist(err) {
		return nil
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".tar.gz") {
			files = append(files, e.Name())
		}
	}
	return files
}
