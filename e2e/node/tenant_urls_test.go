//go:build node

package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// tenantURLsRefused replays the class of Kargo's CVE-2026-32828 (a server-side request forged
// through a URL a tenant writes) on deploy/default as users run it: the URLs a tenant gives the
// controllers to fetch or post to cannot reach the controllers' own ports on loopback (metrics,
// the profiles of /debug/pprof/, health), the cloud's metadata address, nor the Services of the
// artifact server and of the API server (deploy/'s --service-cidr). Each object says which
// address it refused and the flag that would allow it, and stays refused.
//
// Checked against a reintroduced bug: with --service-cidr dropped from the resourceset-
// controller's Deployment, "artifacts" (404 Not Found from the artifact server) and
// "api-server" (the API server's certificate) reach their Services, and the test fails.
func tenantURLsRefused(ctx context.Context, t *testing.T, cluster *Cluster) {
	const ns = "tenant-urls"
	serviceIP := func(ns, name string) string {
		return kubectl(ctx, t, cluster, "-n", ns, "get", "service/"+name, "-o", "jsonpath={.spec.clusterIP}")
	}
	artifactIP, apiIP := serviceIP("sluice-system", "source-controller"), serviceIP("default", "kubernetes")

	// The resourceset-controller's ExternalService and forge providers.
	providers := []struct{ name, kind, url, refused, why string }{
		{"own-metrics", "ExternalService", "http://127.0.0.1:8080/metrics", "127.0.0.1", "a loopback address"},
		{"own-pprof", "ExternalService", "http://localhost:8080/debug/pprof/heap", "", "a loopback address"},
		{"own-health", "ExternalService", "http://0.0.0.0:9440/healthz", "0.0.0.0", "an unspecified address"},
		{"metadata", "ExternalService", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "169.254.169.254", "a link-local address"},
		{"artifacts", "ExternalService", "http://source-controller.sluice-system.svc.cluster.local./", artifactIP, "in the cluster's Service range 10.96.0.0/12"},
		{"api-server", "ExternalService", "https://kubernetes.default.svc.cluster.local./api", apiIP, "in the cluster's Service range 10.96.0.0/12"},
		{"forge-metrics", "GiteaBranch", "http://localhost:8080/team/app", "", "a loopback address"},
	}
	// The gating-controller's notifications.
	notifications := []struct{ name, address, refused, why string }{
		{"own-metrics", "http://127.0.0.1:8080/metrics", "127.0.0.1", "a loopback address"},
		{"metadata", "http://169.254.169.254/latest/api/token", "169.254.169.254", "a link-local address"},
		{"artifacts", "http://" + artifactIP + "/", artifactIP, "in the cluster's Service range 10.96.0.0/12"},
	}
	var objects strings.Builder
	fmt.Fprintf(&objects, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
	for _, p := range providers {
		fmt.Fprintf(&objects, `---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata: {name: %s, namespace: %s}
spec: {type: %s, url: %q%s}
`, p.name, ns, p.kind, p.url, map[bool]string{true: ", insecure: true"}[p.kind == "ExternalService" && strings.HasPrefix(p.url, "http:")])
	}
	for _, n := range notifications {
		fmt.Fprintf(&objects, `---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateNotification
metadata: {name: %s, namespace: %s}
spec: {type: generic, events: [Opened, Closed], address: %q}
`, n.name, ns, n.address)
	}
	applyObjects(ctx, t, cluster, objects.String())

	check := func(object, flag, refused, why string) {
		t.Helper()
		if out := kubectlMay(ctx, cluster, "-n", ns, "wait", "--for=condition=Ready=false", "--timeout=120s", object); !strings.Contains(out, "condition met") {
			t.Errorf("%s is not refused: %s\n%s", object, out, kubectlMay(ctx, cluster, "-n", ns, "get", object, "-o", "yaml"))
			return
		}
		msg := kubectl(ctx, t, cluster, "-n", ns, "get", object, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		want := "refusing to connect to " + refused
		if !strings.Contains(msg, want) || !strings.Contains(msg, why) || !strings.Contains(msg, "only when --"+flag+" allows") {
			t.Errorf("%s: the message is %q, want the refusal of %s (%s) naming --%s", object, msg, refused, why, flag)
		}
		t.Logf("%s: %s", object, msg)
	}
	for _, p := range providers {
		check("resourcesetinputprovider/"+p.name, "external-service-allowed-cidrs", p.refused, p.why)
		// An ExternalService is refused for good: no retry can help until the URL or the flags
		// change.
		if p.kind != "ExternalService" {
			continue
		}
		if stalled := kubectl(ctx, t, cluster, "-n", ns, "get", "resourcesetinputprovider/"+p.name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Stalled")].status}`); stalled != "True" {
			t.Errorf("resourcesetinputprovider/%s is not Stalled (%q)", p.name, stalled)
		}
	}
	for _, n := range notifications {
		check("gatenotification/"+n.name, "notification-allowed-cidrs", n.refused, n.why)
		if reason := kubectl(ctx, t, cluster, "-n", ns, "get", "gatenotification/"+n.name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].reason}`); reason != "AddressRefused" {
			t.Errorf("gatenotification/%s: reason %q, want AddressRefused", n.name, reason)
		}
	}
}
