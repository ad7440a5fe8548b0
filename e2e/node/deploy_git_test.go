//go:build node

package node

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// deployedFromGit: deploy/default's pods bring a Git repository into the cluster. The
// source-controller fetches a GitRepository from a Git server of shared/testserver (on the
// host's loopback, relayed on the pods' bridge address as the API server is), and the
// manifest-generator's runner runs the repository's .flux.yaml (kustomize build) in a session of
// its own and the manager applies the output. The gating-controller reads a freeze calendar
// from the same artifact: the artifact server's NetworkPolicy lets it in.
func deployedFromGit(ctx context.Context, t *testing.T, cluster *Cluster) {
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "app", map[string]string{
		".flux.yaml":             "version: 1\npatchUpdated:\n  generators:\n    - command: kustomize build .\n  patchFile: flux-patch.yaml\n",
		"app/kustomization.yaml": "namespace: sluice-system\nresources: [configmap.yaml]\n",
		"app/configmap.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\ndata:\n  greeting: hello\n",
		"freeze/calendar.ics": "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Sluice//e2e//EN\r\nBEGIN:VEVENT\r\nUID:freeze\r\n" +
			"SUMMARY:Deploy freeze\r\nDTSTART:20200101T000000Z\r\nDTEND:20990101T000000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
	})
	gitURL := relayGitServer(t, cluster, srv)
	applyObjects(ctx, t, cluster, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: sluice-system}
spec:
  interval: 1m
  url: %s
  ref: {branch: %s}
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: app, namespace: sluice-system}
spec:
  sourceRef: {kind: GitRepository, name: app}
  path: ./app
  interval: 1m
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata: {name: frozen, namespace: sluice-system}
spec: {default: opened}
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata: {name: frozen, namespace: sluice-system}
spec:
  gate: frozen
  calendar:
    sourceRef: {kind: GitRepository, name: app}
    path: freeze/calendar.ics
`, gitURL(repo), repo.CurrentBranch(t)))
	for _, object := range []string{"gitrepository/app", "manifestgeneration/app", "gatekeeper/frozen"} {
		waitReady(ctx, t, cluster, "sluice-system", object)
	}
	if out := kubectlMay(ctx, cluster, "-n", "sluice-system", "get", "gatekeeper/frozen", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].message}`); !strings.Contains(out, "kept closed for 'Deploy freeze'") {
		t.Errorf("the GateKeeper's calendar, from the GitRepository's artifact: %s", out)
	}
	cm, err := cluster.Node.Client.CoreV1().ConfigMaps("sluice-system").Get(ctx, "from-git", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the generated ConfigMap: %v", err)
	}
	if cm.Data["greeting"] != "hello" {
		t.Errorf("the generated ConfigMap holds %v", cm.Data)
	}
}

// relayGitServer makes srv (on the host's loopback) reachable from the cluster's pods on the
// pods' bridge address (RelayToPods), until the test ends, and returns the URL of a repository
// of srv that the pods reach.
func relayGitServer(t *testing.T, cluster *Cluster, srv *testserver.GitServer) func(*testserver.Repo) string {
	t.Helper()
	u, err := url.Parse(srv.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	podAddr, stop, err := cluster.RelayToPods(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return func(repo *testserver.Repo) string {
		r, err := url.Parse(repo.HTTPURL())
		if err != nil {
			t.Fatal(err)
		}
		r.Host = podAddr
		return r.String()
	}
}

// applyObjects applies objects (YAML documents) server-side with the cluster's administrator.
func applyObjects(ctx context.Context, t *testing.T, cluster *Cluster, objects string) {
	t.Helper()
	file := t.TempDir() + "/objects.yaml"
	writeFile(t, file, objects)
	kubectl(ctx, t, cluster, "apply", "--server-side", "-f", file)
}

// waitReady waits until object (kind/name) of ns is Ready, and fails with it and ns's and
// sluice-system's pods and events when it is not within two minutes.
func waitReady(ctx context.Context, t *testing.T, cluster *Cluster, ns, object string) {
	t.Helper()
	if out := kubectlMay(ctx, cluster, "-n", ns, "wait", "--for=condition=Ready", "--timeout=120s", object); !strings.Contains(out, "condition met") {
		t.Fatalf("%s/%s not Ready: %s\n%s\n%s", ns, object, out, kubectlMay(ctx, cluster, "-n", ns, "get", object, "-o", "yaml"),
			describeNamespace(cluster, "sluice-system"))
	}
}
