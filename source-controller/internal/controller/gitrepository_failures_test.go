package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Credentials that stop working: AuthenticationFailed, and the last artifact stays served.
func TestGitRepositoryWrongCredentialsKeepTheArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := server.NewRepo(t, "private")
	first := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	createSecret(t, ns, "auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
	key := createRepo(t, ns, "private", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "auth"}})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + first))

	secret := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "auth"}, secret)).To(Succeed())
	secret.Data["password"] = []byte("wrong")
	g.Expect(k8s.Update(context.Background(), secret)).To(Succeed())
	repo.Commit(t, "Second", map[string]string{"a": "2"})
	poke(t, key)

	g.Eventually(condition(key, sourcev1.FetchFailedCondition), timeout).Should(HavePrefix("True|AuthenticationFailed|"))
	g.Expect(condition(key, meta.ReadyCondition)(g)).To(HavePrefix("False|AuthenticationFailed|"))
	g.Expect(revision(key)(g)).To(Equal("master@sha1:" + first))
	g.Expect(fetchArtifact(t, key)["a"]).To(Equal("1"), "the previous artifact is still served")
	g.Consistently(eventsOf(key), time.Second).ShouldNot(ContainElement(ContainSubstring("wrong")), "no secret in events")
}

func TestGitRepositoryUnknownBranch(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "branches")
	repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	key := createRepo(t, ns, "nope", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{Branch: "nope"}})
	g.Eventually(condition(key, sourcev1.FetchFailedCondition), timeout).Should(Equal(
		"True|GitOperationFailed|failed to resolve the revision of '" + repo.HTTPURL() +
			"': reference not found: branch 'nope' does not exist in the repository"))
	g.Expect(condition(key, meta.ReconcilingCondition)(g)).To(HavePrefix("True|ProgressingWithRetry|"))
}

// A host that accepts connections and never answers: spec.timeout ends the attempt.
func TestGitRepositoryTimeout(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	key := createRepo(t, ns, "silent", sourcev1.GitRepositorySpec{
		URL: "http://" + ln.Addr().String() + "/repo.git", Timeout: &metav1.Duration{Duration: 2 * time.Second},
	})
	g.Eventually(condition(key, sourcev1.FetchFailedCondition), timeout).Should(And(
		HavePrefix("True|GitOperationFailed|"), ContainSubstring("timed out (spec.timeout)")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second))
}

// A repository over --artifact-max-size is refused with a condition saying so.
func TestGitRepositoryArtifactTooLarge(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "big")
	noise := make([]byte, 2*maxArtifactSize)
	_, _ = rand.Read(noise)
	repo.Commit(t, "big blob", map[string]string{"blob.txt": hex.EncodeToString(noise)})
	key := createRepo(t, ns, "big", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(condition(key, sourcev1.StorageOperationFailedCondition), timeout).Should(And(
		HavePrefix("True|ArtifactTooLarge|"), ContainSubstring("--artifact-max-size")))
	g.Expect(getRepo(g, key).Status.Artifact).To(BeNil())
}

// The API server refuses URLs that are not http, https or ssh.
func TestGitRepositoryURLSchemeIsValidated(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ftp"},
		Spec:       sourcev1.GitRepositorySpec{URL: "ftp://example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}},
	}
	err := k8s.Create(context.Background(), obj)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.url"))
}

// A Secret that does not exist (yet) is named, as in every controller (shared/secrets), and
// retried: created later, it is used.
func TestGitRepositoryMissingSecret(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := server.NewRepo(t, "private")
	first := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	key := createRepo(t, ns, "private", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "auth"}})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|"), HaveSuffix("Secret '"+ns+"/auth' not found")))
	createSecret(t, ns, "auth", map[string][]byte{"username": []byte("bob"), "password": []byte("s3cret")})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + first))
}

// Credentials written into spec.url never show in conditions, events or logs: the URL is named
// with its password redacted.
func TestGitRepositoryURLCredentialsRedacted(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{Username: "bob", Password: "s3cret"})
	repo := server.NewRepo(t, "private")
	repo.Commit(t, "Initial commit", map[string]string{"a": "1"})
	withCredentials := strings.Replace(repo.HTTPURL(), "://", "://bob:s3cret@", 1)
	key := createRepo(t, ns, "inline", sourcev1.GitRepositorySpec{URL: withCredentials, Reference: &sourcev1.GitRepositoryRef{Branch: "missing"}})
	g.Eventually(condition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|"), ContainSubstring("bob:xxxxx@")))
	g.Expect(condition(key, sourcev1.FetchFailedCondition)(g)).NotTo(ContainSubstring("s3cret"))
	g.Consistently(eventsOf(key), time.Second).ShouldNot(ContainElement(ContainSubstring("s3cret")))
	// Nor in the logs, the "Reconciler error" lines of controller-runtime included.
	g.Expect(logs.Lines()).To(ContainElement(And(ContainSubstring("Reconciler error"), ContainSubstring("bob:xxxxx@"))))
	g.Expect(logs.Lines()).NotTo(ContainElement(ContainSubstring("s3cret")))
}
