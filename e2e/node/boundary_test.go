//go:build node

package node

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// boundaryReport is the start of a generator of TestTrustBoundary: kv prints a key of the
// ConfigMap "observed" the generator outputs, its value on one line.
const boundaryReport = `set +e
echo 'apiVersion: v1'
echo 'kind: ConfigMap'
echo 'metadata: {name: observed}'
echo 'data:'
kv() { printf '  %s: "%s"\n' "$1" "$(printf '%s' "$2" | tr '\n"\\' ' __')"; }
kv start "$(date +%s)"
kv uid "$(id -u)"
kv token "$(test -e /var/run/secrets/kubernetes.io/serviceaccount/token && echo present || echo absent)"
kv data "$(test -e /data && echo present || echo absent)"
kv env "$(env | cut -d= -f1 | sort | tr '\n' ' ')"
`

// boundaryHolder keeps a secret in its tree for 20 seconds, with its tree's path and a marker in
// the command line of a process ("; true" keeps sh from exec'ing sleep in its place), where a
// shared container's /proc would show them to every other session.
const boundaryHolder = boundaryReport + `echo secret-of-a > secret.txt
kv network "$(wget -q -O /dev/null http://10.96.0.1:443/ 2>&1 | head -n1)"
kv own "$(wget -S -O /dev/null "$OWN" 2>&1 | head -n1)"
kv tree "$PWD"
sh -c 'sleep 20; true' "$PWD" holder-marker-7f3a
kv end "$(date +%s)"
`

// boundaryProber runs while the holder sleeps: it looks for the holder in /proc (its marker, by
// a pattern its own command line does not match; any tree but its own), counts the processes it sees, lists /work, and fetches its own
// artifact and the holder's, unsigned and with its own signature.
const boundaryProber = boundaryReport + `sleep 5
kv probed "$(date +%s)"
kv marker "$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -c 'holder-marker-7f3[a]')"
kv otherTree "$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep '^/work/' | grep -v "^${PWD%/tree*}/" | head -n1)"
kv processes "$(ls -d /proc/[0-9]* | wc -l)"
kv lsWork "$(ls /work 2>&1)"
kv ownWork "$(basename "${PWD%/tree*}")"
code() { wget -S -O /dev/null "$1" 2>&1 | sed -n 's/.*HTTP\/1\.[01] \([0-9][0-9][0-9]\).*/\1/p' | head -n1; }
kv own "$(code "$OWN")"
kv unsigned "$(code "$UNSIGNED")"
kv foreign "$(code "$FOREIGN")"
kv end "$(date +%s)"
`

// trustBoundary: deploy/default runs tenants' .flux.yaml generators as users run them, each
// session in a pod of its own (ManifestGenerations of two namespaces, each applying as an
// account of its own that may only write ConfigMaps there), and the generators print what they
// observe of the trust boundary (deploy/README.md) as a ConfigMap: no ServiceAccount token, a
// user neither root nor the manager's, no /data; the two sessions, running at the same time,
// see nothing of each other: not the other's processes and command lines in /proc, not its
// tree in /work. The holder, without spec.egress, opens no network socket (the API server's
// address, its own artifact); the prober asks for egress, and another namespace's artifact is
// not found, unsigned or with the tenant's own signature, while its own signed URL is served.
func trustBoundary(ctx context.Context, t *testing.T, cluster *Cluster) {
	began := time.Now()
	srv := testserver.NewGitServer(t, testserver.Options{})
	holderRepo, proberRepo := srv.NewRepo(t, "holder"), srv.NewRepo(t, "prober")
	for repo, command := range map[*testserver.Repo]string{holderRepo: boundaryHolder, proberRepo: boundaryProber} {
		repo.Commit(t, "generator", map[string]string{".flux.yaml": fluxYAML(command)})
	}
	gitURL := relayGitServer(t, cluster, srv)
	tenants := map[string]*testserver.Repo{"boundary-a": holderRepo, "boundary-b": proberRepo}
	for ns, repo := range tenants {
		applyObjects(ctx, t, cluster, tenantObjects(ns, gitURL(repo), repo.CurrentBranch(t)))
	}
	artifact := map[string][2]string{} // namespace: URL, path
	for ns := range tenants {
		waitReady(ctx, t, cluster, ns, "gitrepository/app")
		u := kubectl(ctx, t, cluster, "-n", ns, "get", "gitrepository/app", "-o", "jsonpath={.status.artifact.url}")
		p := kubectl(ctx, t, cluster, "-n", ns, "get", "gitrepository/app", "-o", "jsonpath={.status.artifact.path}")
		artifact[ns] = [2]string{u, p}
	}
	own := artifact["boundary-b"]
	base := strings.TrimSuffix(own[0], own[1])                               // http://<server>/<signature>/
	server := base[:strings.LastIndex(strings.TrimSuffix(base, "/"), "/")+1] // http://<server>/
	foreignPath := artifact["boundary-a"][1]

	// Both ManifestGenerations at once: the manifest-generator reconciles 4 at a time.
	// The holder's commands have no network; the prober's ask for egress.
	applyObjects(ctx, t, cluster, generationObject("boundary-a", false, map[string]string{"OWN": artifact["boundary-a"][0]})+"---\n"+generationObject("boundary-b", true, map[string]string{
		"OWN": own[0], "UNSIGNED": server + foreignPath, "FOREIGN": base + foreignPath,
	}))
	observed := map[string]map[string]string{}
	for ns := range tenants {
		waitReady(ctx, t, cluster, ns, "manifestgeneration/app")
		cm, err := cluster.Node.Client.CoreV1().ConfigMaps(ns).Get(ctx, "observed", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ConfigMap of %s: %v", ns, err)
		}
		observed[ns] = cm.Data
		for _, k := range sortedKeys(cm.Data) {
			t.Logf("%s %s: %s", ns, k, cm.Data[k])
		}
	}
	checkBoundary(t, observed["boundary-a"], observed["boundary-b"])
	t.Logf("the generators ran, observed and were checked %v after the test began", time.Since(began).Round(time.Second))
}

// checkBoundary checks what the holder (a) and the prober (b) observed.
func checkBoundary(t *testing.T, a, b map[string]string) {
	t.Helper()
	for name, o := range map[string]map[string]string{"holder": a, "prober": b} {
		if o["token"] != "absent" {
			t.Errorf("%s: the ServiceAccount token is %s", name, o["token"])
		}
		if o["data"] != "absent" {
			t.Errorf("%s: /data is %s", name, o["data"])
		}
		if uid := o["uid"]; uid == "" || uid == "0" || uid == "65532" {
			t.Errorf("%s: runs as uid %q", name, uid)
		}
	}
	// The two sessions overlapped: the prober probed while the holder slept with its secret.
	aStart, aEnd, probed := atoi(t, a["start"]), atoi(t, a["end"]), atoi(t, b["probed"])
	if probed < aStart || probed > aEnd {
		t.Errorf("the prober probed at %d, outside the holder's run [%d, %d]", probed, aStart, aEnd)
	}
	// Nothing of the holder is in the prober's /proc and /work: they are the pod's own.
	if b["marker"] != "0" || b["otherTree"] != "" {
		t.Errorf("the prober saw the holder's command line in /proc: marker %q, tree %q", b["marker"], b["otherTree"])
	}
	if n := atoi(t, b["processes"]); n > 10 {
		t.Errorf("the prober sees %d processes: more than its own session's", n)
	}
	if b["lsWork"] != b["ownWork"] {
		t.Errorf("the prober's /work holds %q, not only its own session %q", b["lsWork"], b["ownWork"])
	}
	if a["uid"] == "" || a["uid"] == b["uid"] {
		t.Errorf("the two sessions run as users %q and %q", a["uid"], b["uid"])
	}
	// The holder did not ask for egress: its commands may open no network socket, not even to
	// the API server's address or its own artifact.
	if !strings.Contains(a["network"], "Permission denied") || !strings.Contains(a["own"], "Permission denied") && !strings.Contains(a["own"], "bad address") {
		t.Errorf("the holder, without spec.egress, reached the network: API server %q, own artifact %q", a["network"], a["own"])
	}
	// The prober asked for egress: the artifact server decides what it gets.
	want := map[string]string{"own": "200", "unsigned": "404", "foreign": "404"}
	for k, v := range want {
		if b[k] != v {
			t.Errorf("prober %s artifact: HTTP %q, want %s", k, b[k], v)
		}
	}
}

func fluxYAML(command string) string {
	var b strings.Builder
	b.WriteString("version: 1\ncommandUpdated:\n  generators:\n    - command: |\n")
	for _, line := range strings.Split(strings.TrimSuffix(command, "\n"), "\n") {
		b.WriteString("        " + line + "\n")
	}
	return b.String()
}

// tenantObjects: a namespace, its account that may only write ConfigMaps there, and its
// GitRepository.
func tenantObjects(ns, url, branch string) string {
	return accountObjects(ns) + fmt.Sprintf(`---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: %[1]s}
spec:
  interval: 1h
  url: %[2]s
  ref: {branch: %[3]s}
`, ns, url, branch)
}

// accountObjects: a namespace and its account "applier", which may only write ConfigMaps there.
func accountObjects(ns string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: applier, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmaps, namespace: %[1]s}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: applier-configmaps, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}
subjects: [{kind: ServiceAccount, name: applier, namespace: %[1]s}]
`, ns)
}

func generationObject(ns string, egress bool, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata: {name: app, namespace: %s}
spec:
  serviceAccountName: applier
  sourceRef: {kind: GitRepository, name: app}
  path: ./
  interval: 1h
  egress: %t
`, ns, egress)
	if len(env) > 0 {
		b.WriteString("  env:\n")
		for _, k := range sortedKeys(env) {
			fmt.Fprintf(&b, "    - {name: %s, value: %q}\n", k, env[k])
		}
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Errorf("not a time: %q", s)
	}
	return n
}
