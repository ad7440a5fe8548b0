//go:build node

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/e2e/node"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// TestClusterTour starts what `make cluster` starts (startNodeSandbox: deploy/default's pods on a
// real node, the demo's Git server relayed to them, the demo applied), checks that the demo is
// Ready with no pending object, and takes the README's tour on it with the README's commands,
// in a shell set up as the README says (`.cluster` for `.dev`, and CURL_HOME): a push applied, a
// freeze that holds a push and a bypass that releases it, a ManifestUpdate pushed to the Git
// server by the manifest-generator's pod, a tenant added, an artifact fetched by its URL and
// checked against its digest, and a gate closed through the receiver. The node's own tests
// (e2e/node) check that the host is left as it was.
func TestClusterTour(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.CleanStale(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	work := t.TempDir()
	state := filepath.Join(work, ".cluster")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := startNodeSandbox(t.Context(), root, bin, state, filepath.Join(root, "deploy", "examples"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("pods Ready after %v, the demo after %v", s.PodsReady.Round(time.Millisecond), s.Took.Round(time.Millisecond))
	if pending := waitReady(t.Context(), s.Cluster.Env.Client, s.Objects, 0); len(pending) > 0 {
		t.Fatalf("demo objects not Ready: %v", pending)
	}
	if err := writeStateFiles(state, s); err != nil {
		t.Fatal(err)
	}

	tour := &tourShell{t: t, dir: work, env: append(os.Environ(),
		"KUBECONFIG="+filepath.Join(state, "kubeconfig"), "PATH="+bin+":"+os.Getenv("PATH"), "CURL_HOME="+state,
		"HOME="+work, "GIT_AUTHOR_NAME=tour", "GIT_AUTHOR_EMAIL=tour@example.com",
		"GIT_COMMITTER_NAME=tour", "GIT_COMMITTER_EMAIL=tour@example.com", "DEMO="+filepath.Join(work, "demo"),
	)}

	// 1. From Git to the cluster.
	tour.want(`kubectl -n sluice-demo get deployment staging-podinfo -o jsonpath='{.spec.replicas}'`, "1")
	tour.want(`kubectl -n sluice-demo get deployment production-podinfo -o jsonpath='{.spec.replicas}'`, "3")

	// 2. Push a change: applied in the cluster.
	tour.run(`git clone -q $(cat .cluster/git-url) $DEMO && cd $DEMO
sed -i 's/replicas: 1/replicas: 2/' base/podinfo.yaml
git commit -qam "Two replicas" && git push -q`)
	pushed := time.Now()
	tour.eventually(`kubectl -n sluice-demo get deployment staging-podinfo -o jsonpath='{.spec.replicas}'`, "2", time.Minute)
	t.Logf("a push applied in the cluster %v after git push", time.Since(pushed).Round(time.Millisecond))

	// 3. A change freeze holds a push; a bypass releases it.
	tour.run(`kubectl gate close change-freeze -n sluice-demo`)
	tour.eventually(`kubectl -n sluice-demo get gate change-freeze -o jsonpath='{.status.conditions[?(@.type=="Opened")].status}'`, "False", 30*time.Second)
	tour.run(`cd $DEMO && sed -i 's/replicas: 2/replicas: 4/' base/podinfo.yaml && git commit -qam "Four" && git push -q`)
	head := strings.TrimSpace(tour.run(`cd $DEMO && git rev-parse HEAD`))
	tour.eventually(`kubectl -n sluice-demo get events --field-selector reason=Held -o name | head -n1 | grep -c . || true`, "1", time.Minute)
	time.Sleep(15 * time.Second) // longer than the GitRepository's interval (10 s): a fetch would have happened
	tour.want(`kubectl -n sluice-demo get deployment staging-podinfo -o jsonpath='{.spec.replicas}'`, "2")
	if out := tour.run(`kubectl -n sluice-demo get gitrepository demo`); !strings.Contains(out, head[:7]) && !strings.Contains(out, "closed") {
		t.Errorf("the held GitRepository names neither the waiting commit %s nor its closed gates:\n%s", head, out)
	}
	tour.run(`kubectl gate open bypass-signoff "Patching a CVE" -n sluice-demo`)
	opened := time.Now()
	tour.eventually(`kubectl -n sluice-demo get deployment staging-podinfo -o jsonpath='{.spec.replicas}'`, "4", time.Minute)
	t.Logf("the held push applied %v after the bypass opened", time.Since(opened).Round(time.Millisecond))
	if out := tour.run(`kubectl gate status bypass-signoff -n sluice-demo`); !strings.Contains(out, "Patching a CVE") {
		t.Errorf("kubectl gate status does not give the reason:\n%s", out)
	}

	// 4. An update written back to Git by the manifest-generator's pod.
	tour.run(`kubectl apply -f - <<EOF
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: podinfo-6-7-1
  namespace: sluice-demo
spec:
  generationRef:
    name: staging
  workload: sluice-demo:deployment/staging-podinfo
  containerImage:
    container: podinfo
    image: ghcr.io/stefanprodan/podinfo:6.7.1
EOF`)
	tour.eventually(`kubectl -n sluice-demo get manifestupdate podinfo-6-7-1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'`, "True", 2*time.Minute)
	if log := tour.run(`cd $DEMO && git pull -q && git log -1 --stat`); !strings.Contains(log, "staging/flux-patch.yaml") {
		t.Errorf("the last commit does not change staging/flux-patch.yaml:\n%s", log)
	}
	tour.eventually(`kubectl -n sluice-demo get deployment staging-podinfo -o jsonpath='{.spec.template.spec.containers[0].image}'`, "ghcr.io/stefanprodan/podinfo:6.7.1", time.Minute)

	// 5. Tenants.
	tour.run(`kubectl -n sluice-demo patch resourceset tenants --type=json -p '[{"op":"add","path":"/spec/inputs/-","value":{"tenant":"team3","replicas":1}}]'`)
	tour.eventually(`kubectl get configmap tenant -n team3 -o name`, "configmap/tenant", time.Minute)

	// 6. Artifacts, by their URL, from the host (CURL_HOME's .curlrc sends the Service's name to
	// its address).
	tour.want(`url=$(kubectl -n sluice-demo get helmchart podinfo -o jsonpath='{.status.artifact.url}')
echo sha256:$(curl -sf $url | sha256sum | cut -d' ' -f1)`,
		strings.TrimSpace(tour.run(`kubectl -n sluice-demo get helmchart podinfo -o jsonpath='{.status.artifact.digest}'`)))

	// 7. A gate from a pipeline, through the receiver.
	out := tour.run(`token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
kubectl -n sluice-demo create secret generic bypass-signoff-token --from-literal=token=$token >/dev/null
kubectl -n sluice-demo patch gate bypass-signoff --type=merge -p '{"spec":{"receiver":{"secretRef":{"name":"bypass-signoff-token"}}}}' >/dev/null
body="{\"reason\":\"CVE patch shipped\",\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}"
url=$(cat .cluster/receiver-url)/gates/sluice-demo/bypass-signoff
for i in $(seq 50); do code=$(curl -s -o /dev/null -w '%{http_code}' $url/close -H "Authorization: Bearer $token" -d "$body"); [ "$code" = 202 ] && break; sleep 0.2; done
echo close=$code
echo replay=$(curl -s -o /dev/null -w '%{http_code}' $url/close -H "Authorization: Bearer $token" -d "$body")
echo badtoken=$(curl -s -o /dev/null -w '%{http_code}' $url/open -H "Authorization: Bearer nope" -d "$body")`)
	for _, want := range []string{"close=202", "replay=409", "badtoken=401"} {
		if !strings.Contains(out, want) {
			t.Errorf("the receiver: want %s, got\n%s", want, out)
		}
	}
	tour.eventually(`kubectl -n sluice-demo get gate bypass-signoff -o jsonpath='{.status.conditions[?(@.type=="Opened")].status}'`, "False", 30*time.Second)
}

// tourShell runs the tour's commands with bash in dir, with env.
type tourShell struct {
	t   *testing.T
	dir string
	env []string
}

// run runs script and fails the test when it fails; it returns its output.
func (s *tourShell) run(script string) string {
	s.t.Helper()
	out, err := s.output(script)
	if err != nil {
		s.t.Fatalf("%s\n%v\n%s", script, err, out)
	}
	return out
}

func (s *tourShell) output(script string) (string, error) {
	cmd := exec.CommandContext(s.t.Context(), "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// want runs script and fails the test unless it prints want.
func (s *tourShell) want(script, want string) {
	s.t.Helper()
	if got := strings.TrimSpace(s.run(script)); got != want {
		s.t.Errorf("%s\nprinted %q, want %q", script, got, want)
	}
}

// eventually runs script until it prints want, and fails the test if it does not within timeout.
func (s *tourShell) eventually(script, want string, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := s.output(script)
		if err == nil && strings.TrimSpace(out) == want {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s\nprinted %q (%v) for %v, want %q", script, strings.TrimSpace(out), err, timeout, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
