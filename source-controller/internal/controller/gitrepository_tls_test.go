package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// HTTPS with a private CA (`ca.crt`) and a bearer token; without the CA the certificate is refused.
func TestGitRepositoryHTTPSWithCAAndBearerToken(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{TLS: true, BearerToken: "t0ken"})
	repo := server.NewRepo(t, "tls")
	sha := repo.Commit(t, "Initial commit", map[string]string{"a": "1"})

	createSecret(t, ns, "https", map[string][]byte{"bearerToken": []byte("t0ken"), "ca.crt": server.CAPEM()})
	key := createRepo(t, ns, "tls", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "https"}})
	g.Eventually(revision(key), timeout).Should(Equal("master@sha1:" + sha))

	createSecret(t, ns, "no-ca", map[string][]byte{"bearerToken": []byte("t0ken")})
	bad := createRepo(t, ns, "no-ca", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), SecretRef: &meta.LocalObjectReference{Name: "no-ca"}})
	g.Eventually(condition(bad, sourcev1.FetchFailedCondition), timeout).Should(And(
		HavePrefix("True|GitOperationFailed|"), ContainSubstring("certificate")))
}
