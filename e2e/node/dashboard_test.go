//go:build node

package node

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// deployedDashboard adds deploy/components/dashboard to the running deploy/default, as
// deploy/README.md shows, and calls its Service as people would: with no token nothing is read;
// a tenant's reader reads their namespace at /ns/<namespace>/ and nothing of the cluster, and
// is refused a reconcile by the API server; a tenant's operator reconciles, and the request is
// theirs. The dashboard's pod holds no token of its own.
func deployedDashboard(ctx context.Context, t *testing.T, cluster *Cluster) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := RenderOverlay(root, cluster.Node.opts.BinDir, t.TempDir(), []string{"dashboard"}, "namespace: sluice-system\n")
	if err != nil {
		t.Fatal(err)
	}
	kubectl(ctx, t, cluster, "apply", "--server-side", "--field-manager=sluice-e2e", "-f", rendered)
	wait, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	waitDeploymentsReady(wait, t, cluster, "sluice-system", []string{"sluice-dashboard"})

	pods, err := cluster.Node.Client.CoreV1().Pods("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=sluice-dashboard"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the dashboard's pod: %v %v", pods, err)
	}
	for _, v := range pods.Items[0].Spec.Volumes {
		if v.Projected != nil {
			t.Fatalf("the dashboard's pod mounts a projected volume %q: it must hold no token", v.Name)
		}
	}

	const ns = "dashboard-tenant"
	read := `- apiGroups: [gating.toolkit.fluxcd.io]
  resources: [gates]
  verbs: [get, list, watch]
- apiGroups: [source.toolkit.fluxcd.io]
  resources: [gitrepositories]
  verbs: [get, list, watch]`
	objects := `apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: release, namespace: ` + ns + `}
spec: {default: closed}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: ` + ns + `}
spec: {interval: 10m, url: "https://git.example.com/app.git", gates: {refs: [release]}}
`
	for _, account := range []struct{ name, rules string }{
		{"reader", read},
		{"operator", read + `
- apiGroups: [source.toolkit.fluxcd.io]
  resources: [gitrepositories]
  verbs: [patch]`},
	} {
		objects += `---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ` + account.name + `, namespace: ` + ns + `}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ` + account.name + `, namespace: ` + ns + `}
rules:
` + account.rules + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ` + account.name + `, namespace: ` + ns + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ` + account.name + `}
subjects: [{kind: ServiceAccount, name: ` + account.name + `, namespace: ` + ns + `}]
`
	}
	applyObjects(ctx, t, cluster, objects)
	token := func(account string) string {
		tr, err := cluster.Node.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, operator := token("reader"), token("operator")

	base := "http://" + kubectl(ctx, t, cluster, "-n", "sluice-system", "get", "service/sluice-dashboard", "-o", "jsonpath={.spec.clusterIP}") + "/"
	call := func(method, path, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Sluice-Dashboard", "1")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(body))
	}
	expect := func(method, path, token string, code int, contains string) {
		t.Helper()
		got, body := call(method, path, token)
		if got != code || !strings.Contains(body, contains) {
			t.Errorf("%s %s: %d %s; want %d and %q", method, path, got, body, code, contains)
		}
	}

	expect(http.MethodGet, "flow.html", "", http.StatusOK, "<html")
	expect(http.MethodGet, "api/flow", "", http.StatusUnauthorized, "sign in: no Kubernetes token in the request")
	expect(http.MethodGet, "api/flow", "made-up", http.StatusUnauthorized, "the API server does not accept this token")
	// The reader's namespace, and nothing of the cluster.
	expect(http.MethodGet, "ns/"+ns+"/api/flow", reader, http.StatusOK, `"id":"GitRepository/`+ns+`/app"`)
	expect(http.MethodGet, "ns/"+ns+"/api/flow", reader, http.StatusOK, `"gates":[{"namespace":"`+ns+`","name":"release","state"`)
	expect(http.MethodGet, "api/flow", reader, http.StatusOK, `{"kind":"Gate","reason":"forbidden: your RBAC does not let you list them"}`)
	expect(http.MethodGet, "ns/sluice-system/api/flow", reader, http.StatusOK, `"nodes":[],"edges":[],"gates":[]`)
	expect(http.MethodPost, "ns/"+ns+"/api/objects/GitRepository/"+ns+"/app/reconcile", reader, http.StatusForbidden,
		`User "system:serviceaccount:`+ns+`:reader" cannot patch resource "gitrepositories"`)
	expect(http.MethodPost, "ns/"+ns+"/api/objects/GitRepository/"+ns+"/app/reconcile", operator, http.StatusOK, "reconcile requested")
	annotations := kubectl(ctx, t, cluster, "-n", ns, "get", "gitrepository/app", "-o", "jsonpath={.metadata.annotations}")
	if !strings.Contains(annotations, "reconcile.fluxcd.io/requestedAt") {
		t.Errorf("the operator's reconcile did not reach the GitRepository: %s", annotations)
	}
	managers := kubectl(ctx, t, cluster, "-n", ns, "get", "gitrepository/app", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}")
	if !strings.Contains(managers, "kubectl-gate") {
		t.Errorf("the reconcile was not written by the dashboard: managers %s", managers)
	}
}
