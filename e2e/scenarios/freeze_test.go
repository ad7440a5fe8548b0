package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The change freeze of gating-controller/docs/gate.md: its Gates and GitRepository as the docs write them (the GitRepository's apiVersion
// is the source API's; the docs's kustomize.toolkit.fluxcd.io/v1beta1 is a typo of the RFC).
const changeFreeze = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: change-freeze
  namespace: flux-system
spec:
  closed: true
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: bypass-signoff
  namespace: flux-system
spec:
  closed: true
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 2s
  url: __URL__
  secretRef:
    name: flux-system
  gates:
    # all (default): all gates must be open for the reconciliation to go ahead.
    # oneOf: at least one of the gates must be open for the reconciliation to go ahead.
    require: oneOf # <all|oneOf>
    refs:
    - change-freeze # gate that enforces a change freeze time window
    - bypass-signoff # gate that allows other gates to be overriden.
`

// freezeGateKeeper is the docs' GateKeeper with its change freeze windows replaced by one
// computed from the clock: the hours given, every minute of them.
const freezeGateKeeper = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateKeeper
metadata:
  name: change-freeze-gatekeeper
  namespace: flux-system
spec:
  gate: change-freeze
  type: cronexpression # cronjob/cronexpression?
  cronjob:
    closed:
    - '__FREEZE__'
`

// freezeHours is a cron expression active during the two hours starting `from` hours after
// the current one (UTC): with from = 0 it is active now and for at least an hour, whatever the
// time of day the test runs.
func freezeHours(now time.Time, from int) string {
	h := (now.UTC().Hour() + from) % 24
	return fmt.Sprintf("* %d,%d * * *", h, (h+1)%24)
}

// A change freeze held by a GateKeeper blocks new commits at the GitRepository;
// `kubectl gate open bypass-signoff` releases one within seconds; closing it blocks again.
func TestScenarioChangeFreeze(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "flux-system")
	g := s.g
	s.gitSecret(s.ns, "flux-system")
	repo, first := s.newRepo("flux-system", map[string]string{"apps/app.yaml": configMapYAML("app", "v1")})
	s.create(changeFreeze, "__URL__", repo.HTTPURL())

	// Both gates closed: the new source does not fetch anything.
	bothClosed := "Reconciliation is blocked as none of its gates is opened: gate 'flux-system/change-freeze' is closed and gate 'flux-system/bypass-signoff' is closed."
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Ready"), timeout).Should(Equal("False|GateClosed|" + bothClosed))
	g.Expect(revisionOf(gitRepositoryGVK, s.ns, "flux-system")(g)).To(BeEmpty())

	// The GateKeeper outside its freeze holds change-freeze opened ("only closed during the
	// change freezes"): the first commit goes through.
	now := time.Now().UTC()
	keeper := s.create(freezeGateKeeper, "__FREEZE__", freezeHours(now, 3))[0]
	g.Eventually(readyOf(gitRepositoryGVK, s.ns, "flux-system"), timeout).Should(Equal(
		"True|Succeeded|stored artifact for revision 'master@sha1:" + first + "'"))
	g.Expect(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Blocked")(g)).To(BeEmpty())

	// The change freeze starts now and lasts until the end of the next hour.
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, gateKeeperGVK, s.ns, keeper.GetName())
		obj.Object["spec"].(map[string]any)["cronjob"] = map[string]any{"closed": []any{freezeHours(now, 0)}}
		g.Expect(k8s().Update(t.Context(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
	freezeEnd := now.Truncate(time.Hour).Add(2 * time.Hour).Format(time.RFC3339)
	g.Eventually(strOf(gateKeeperGVK, s.ns, keeper.GetName(), "status", "active"), timeout).Should(Equal("closed"))
	frozen := fmt.Sprintf("True|GateClosed|Reconciliation is blocked as none of its gates is opened: gate 'flux-system/change-freeze' is closed until %s and gate 'flux-system/bypass-signoff' is closed.", freezeEnd)
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Blocked"), timeout).Should(Equal(frozen))

	// During the freeze a new commit is not fetched: the source keeps its artifact, still
	// Ready, for several of its 2s intervals.
	second := repo.Commit(t, "Patch CVE-2026-0001", map[string]string{"apps/app.yaml": configMapYAML("app", "v2")})
	g.Consistently(revisionOf(gitRepositoryGVK, s.ns, "flux-system"), 8*time.Second, 500*time.Millisecond).Should(Equal("master@sha1:" + first))
	g.Expect(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Ready")(g)).To(HavePrefix("True|Succeeded|"))
	g.Expect(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Blocked")(g)).To(Equal(frozen))

	// The bypass: opening bypass-signoff releases the commit within 5 seconds.
	start := time.Now()
	out := s.kubectlGate("open", "bypass-signoff", "Patching a CVE", "-n", s.ns)
	g.Expect(out).To(Equal(`gate flux-system/bypass-signoff: open requested by sluice-admin: "Patching a CVE"`))
	g.Eventually(revisionOf(gitRepositoryGVK, s.ns, "flux-system"), 5*time.Second, 100*time.Millisecond).Should(Equal("master@sha1:"+second),
		"released %s after the gate was opened", time.Since(start))
	t.Logf("the commit was fetched %s after `kubectl gate open`", time.Since(start).Round(10*time.Millisecond))
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Blocked"), timeout).Should(BeEmpty())
	g.Expect(logContains("gating-controller", `"msg":"opening gate: 'Patching a CVE'"`, `"name":"bypass-signoff"`, `"namespace":"flux-system"`)()).To(BeTrue())
	g.Expect(logContains("source-controller", `"GitRepository":{"name":"flux-system","namespace":"flux-system"}`,
		`"gates":{"require":"oneOf","status":[`, `{"closed":"true","gate":"change-freeze"}`, `{"closed":"false","gate":"bypass-signoff"}`)()).To(BeTrue(),
		"the source-controller logs the gates it considered")

	// Closing the bypass again: the next commit waits for the end of the freeze.
	g.Expect(s.kubectlGate("close", "bypass-signoff", "-n", s.ns)).To(HavePrefix("gate flux-system/bypass-signoff: close requested by sluice-admin"))
	g.Expect(s.kubectlGate("wait", "bypass-signoff", "--for", "closed", "--timeout", "30s", "-n", s.ns)).To(ContainSubstring("is closed"))
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "flux-system", "Blocked"), timeout).Should(Equal(frozen))
	repo.Commit(t, "Add a feature", map[string]string{"apps/app.yaml": configMapYAML("app", "v3")})
	g.Consistently(revisionOf(gitRepositoryGVK, s.ns, "flux-system"), 8*time.Second, 500*time.Millisecond).Should(Equal("master@sha1:" + second))
	status := s.kubectlGate("status", "-n", s.ns)
	g.Expect(strings.Fields(strings.Split(status, "\n")[1])[:2]).To(Equal([]string{"bypass-signoff", "False"}), status)
}

// configMapYAML is a ConfigMap whose data says its version.
func configMapYAML(name, version string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: %q\n", name, version)
}
