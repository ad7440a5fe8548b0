package fluxreceiver

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
)

// Replays Flux's CVE-2026-40109 (a gcr Receiver took any Google-signed token, whoever it was
// issued to). Sluice implements neither gcr nor generic-oidc: such a Receiver stays Stalled and
// gets no webhook path, so a request with any token, to the path Flux would give it, asks
// nothing to reconcile. Checked against a reintroduced bug: with "gcr" and "generic-oidc" added to
// implemented (verify.go) and authenticate accepting them, the path is served and this test
// fails.
func TestOIDCReceiversAreNotServed(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	const token = "oidc-receiver-token"
	g.Expect(k8s.Create(ctx(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"},
		Data: map[string][]byte{notificationv1.TokenKey: []byte(token)}})).To(Succeed())
	newGitRepository(t, ns, "app", "https://example.com/app.git", nil)
	// A token as Google would sign it for anyone: header, claims (another audience, an
	// expired one), no signature (alg none).
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://accounts.google.com","aud":"https://elsewhere.example.com","email":"attacker@example.com","exp":1}`))
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + claims + "."
	for _, typ := range []string{"gcr", "generic-oidc"} {
		name := typ + "-receiver"
		spec := notificationv1.ReceiverSpec{Type: typ, Resources: []notificationv1.ReceiverResource{resource("GitRepository", "app")}}
		pathToken := token
		if typ == notificationv1.GenericOIDCReceiver {
			// As Flux's: issuers instead of a Secret; the claims checked by CEL.
			spec.OIDCProviders = []notificationv1.OIDCProvider{{IssuerURL: "https://accounts.google.com",
				Validations: []notificationv1.OIDCValidation{{Expression: `claims.email == "ci@example.com"`, Message: "not CI"}}}}
			pathToken = ""
		} else {
			spec.SecretRef = &meta.LocalObjectReference{Name: "token"}
		}
		g.Expect(k8s.Create(ctx(), &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
		g.Eventually(conditionOf(ns, name, meta.StalledCondition), 10*time.Second).Should(HavePrefix(
			"True|ValidationFailed|type '" + typ + "' is not implemented by Sluice's receiver"))
		g.Expect(getReceiver(g, ns, name).Status.WebhookPath).To(BeEmpty())

		path := (&notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}).GetWebhookPath(pathToken)
		code, _ := post(t, path, []byte(`{"message":{"data":"eyJhY3Rpb24iOiJJTlNFUlQifQ=="},"subscription":"s"}`),
			map[string]string{"Authorization": "Bearer " + forged})
		g.Expect(code).To(Equal(404), typ)
	}
	g.Consistently(requestedAt(gitRepositoryGVK, ns, "app"), time.Second).Should(BeEmpty())
}
