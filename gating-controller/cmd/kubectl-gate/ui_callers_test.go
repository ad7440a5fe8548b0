package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startCallersUI serves the pages as in a cluster: to callers with their own tokens, knowing only
// the API server's address and CA. The plugin's kubeconfig (that of the tests' admin) is given
// too, and must not be used.
func startCallersUI(t *testing.T, args ...string) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, env.Config.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	return startUI(t, append([]string{"--authenticate-callers", "--server", env.Config.Host, "--certificate-authority", ca}, args...)...)
}

// accountToken creates a ServiceAccount in ns bound to a Role of rules, and a token for it.
func accountToken(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	})).To(Succeed())
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// request sends a request with headers; a POST is sent as the page sends it (JSON and its
// header), unless headers clear them ("" removes a header).
func request(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Sluice-Dashboard", "1")
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, strings.TrimSpace(string(data))
}

// In a cluster, the page is served to people who each bring their own token: with none, or one
// the API server does not accept, nothing is read; with a reader's token, the page reads what
// the reader may and offers no buttons; an operator's token acts as the operator, and the
// request records them; a token pasted in the sign-in page becomes an HttpOnly, SameSite=Strict
// cookie that stands for it; a revoked token stops working at the next review.
func TestCallersActWithTheirOwnTokens(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns)
	createYAML(t, ns, gitRepository("demo", "bypass-signoff"))
	read := []rbacv1.PolicyRule{
		{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "list", "watch"}},
	}
	reader := accountToken(t, ns, "reader", read...)
	operator := accountToken(t, ns, "operator", append(read,
		rbacv1.PolicyRule{APIGroups: []string{"gating.toolkit.fluxcd.io"}, Resources: []string{"gates"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"patch"}})...)
	url := startCallersUI(t, "-n", ns, "--caller-recheck", "1s")
	bearer := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }

	// The page itself is served to anyone; its data to no one without a token.
	res, _ := request(t, http.MethodGet, url+"flow.html", "", nil)
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	res, body := request(t, http.MethodGet, url+"api/flow", "", nil)
	g.Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(body).To(Equal("sign in: no Kubernetes token in the request"))
	res, body = request(t, http.MethodGet, url+"api/state", "", bearer("made-up"))
	g.Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(body).To(Equal("sign in: the API server does not accept this token"))

	// A reader reads, and has no buttons; trying anyway is refused by the API server.
	res, body = request(t, http.MethodGet, url+"api/flow", "", bearer(reader))
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"id":"GitRepository/` + ns + `/demo"`))
	g.Expect(body).NotTo(ContainSubstring(`"reconcile":true`))
	h := bearer(reader)
	res, body = request(t, http.MethodPost, url+"api/objects/GitRepository/"+ns+"/demo/reconcile", "{}", h)
	g.Expect(res.StatusCode).To(Equal(http.StatusForbidden))
	g.Expect(body).To(ContainSubstring(`User "system:serviceaccount:` + ns + `:reader" cannot patch resource "gitrepositories"`))

	// An operator acts as the operator.
	res, body = request(t, http.MethodGet, url+"api/flow", "", bearer(operator))
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"actions":{"reconcile":true,"suspend":true}`))
	res, body = request(t, http.MethodPost, url+"api/gates/"+ns+"/bypass-signoff/close", `{"reason": "incident"}`, bearer(operator))
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(getGate(t, ns, "bypass-signoff").Annotations).To(HaveKeyWithValue(closeRequest.requestedBy, "system:serviceaccount:"+ns+":operator"))

	// Signing in: from the page only, with a token the API server accepts.
	res, body = request(t, http.MethodPost, url+"api/signin", `{"token": "`+reader+`"}`, map[string]string{"X-Sluice-Dashboard": ""})
	g.Expect(res.StatusCode).To(Equal(http.StatusForbidden), body)
	res, body = request(t, http.MethodPost, url+"api/signin", `{"token": "made-up"}`, nil)
	g.Expect(res.StatusCode).To(Equal(http.StatusUnauthorized), body)
	g.Expect(res.Cookies()).To(BeEmpty())
	res, body = request(t, http.MethodPost, url+"api/signin", `{"token": "`+reader+`"}`, nil)
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(Equal(`{"user":"system:serviceaccount:` + ns + `:reader"}`))
	g.Expect(res.Cookies()).To(HaveLen(1))
	cookie := res.Cookies()[0]
	g.Expect(cookie.HttpOnly).To(BeTrue())
	g.Expect(cookie.SameSite).To(Equal(http.SameSiteStrictMode))
	g.Expect(cookie.Value).NotTo(ContainSubstring(reader[:20]), "the browser holds a random value, not the token")
	withCookie := map[string]string{"Cookie": sessionCookie + "=" + cookie.Value}
	res, body = request(t, http.MethodGet, url+"api/flow", "", withCookie)
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	res, _ = request(t, http.MethodGet, url+"api/flow", "", map[string]string{"Cookie": sessionCookie + "=guessed"})
	g.Expect(res.StatusCode).To(Equal(http.StatusUnauthorized))

	// Under /ns/<namespace>/, the pages and their API read that namespace: a tenant whose
	// rights end at their namespace reads it there, and is refused the rest of the cluster.
	res, body = request(t, http.MethodGet, url+"ns/"+ns+"/flow.html", "", nil)
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	res, body = request(t, http.MethodGet, url+"ns/"+ns+"/api/flow", "", bearer(reader))
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"namespace":"` + ns + `"`))
	g.Expect(body).To(ContainSubstring(`"id":"GitRepository/` + ns + `/demo"`))
	res, body = request(t, http.MethodGet, url+"ns/kube-system/api/flow", "", bearer(reader))
	g.Expect(res.StatusCode).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring(`"nodes":[],"edges":[],"gates":[],"skipped":[{"kind":"Gate","reason":"forbidden: your RBAC does not let you list them"},{"kind":"GitRepository","reason":"forbidden: your RBAC does not let you list them"}`))
	res, _ = request(t, http.MethodGet, url+"ns/Not_A_Namespace/api/flow", "", bearer(reader))
	g.Expect(res.StatusCode).To(Equal(http.StatusNotFound))

	// The reader's account is deleted: its token stops working at the next review.
	g.Expect(env.Client.Delete(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})).To(Succeed())
	g.Eventually(func() int {
		res, _ := request(t, http.MethodGet, url+"api/flow", "", withCookie)
		return res.StatusCode
	}).WithTimeout(10 * time.Second).Should(Equal(http.StatusUnauthorized))

	// Nothing was done with the plugin's own kubeconfig: the GitRepository was never reconciled.
	repo := &unstructured.Unstructured{}
	repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	repo.SetKind("GitRepository")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo"}, repo)).To(Succeed())
	g.Expect(repo.GetAnnotations()).NotTo(HaveKey(reconcileRequestAnnotation))
}
