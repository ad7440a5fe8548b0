package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
)

// The trust boundary: commands from Git run in the runner, never with the controller's rights.
// Here the test process is the controller, and the runner is the separate process that
// runner.StartLocal started (as another user, since the tests run as root).

// requireRoot skips when the tests cannot run the runner as another user: without a second
// user the isolation below would be assumed, not shown. CI runs the tests as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the isolation tests run the runner as another user, which needs root")
	}
}

// generationOf is a ManifestGeneration of the GitRepository "repo" with a name, a path and
// variables.
func generationOf(name, path string, env map[string]string) string {
	m := fmt.Sprintf("metadata:\n  name: %s\nspec:\n  sourceRef:\n    kind: GitRepository\n    name: repo\n  path: %s\n  interval: 1h\n", name, path)
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 0 {
		m += "  env:\n"
	}
	for _, k := range names {
		m += fmt.Sprintf("    - name: %s\n      value: %q\n", k, env[k])
	}
	return m
}

// probe is a generator that reports, in a ConfigMap, what it could reach of the controller: a
// token file of the controller's user (mode 0600), the controller's environment and root
// directory through /proc, and the controller's checkouts.
const probe = `token=$(cat "$TOKEN_FILE" 2>/dev/null || echo denied)
environ=$(cat /proc/$CONTROLLER_PID/environ 2>/dev/null | wc -c)
root=$(ls /proc/$CONTROLLER_PID/root/ 2>/dev/null | wc -l)
storage=$(ls "$STORAGE" 2>/dev/null | wc -l)
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n'
printf '  token: "%s"\n  environBytes: "%s"\n  rootEntries: "%s"\n  checkouts: "%s"\n  uid: "%s"\n' \
  "$token" $environ $root $storage $(id -u)
`

func TestManifestGenerationCommandsCannotReachTheController(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	ns := tenantNamespace(t)
	// A stand-in for the controller's service account token: the controller's user, mode 0600,
	// in a directory anyone may enter.
	tokenDir, err := os.MkdirTemp("", "token-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(tokenDir) })
	g.Expect(os.Chmod(tokenDir, 0o755)).To(Succeed())
	token := filepath.Join(tokenDir, "token")
	g.Expect(os.WriteFile(token, []byte("controller-token-value"), 0o600)).To(Succeed())

	publish(t, ns, "repo", "main@sha1:e001", map[string]string{
		"staging/.flux.yaml": fluxYAML("sh ./probe.sh"),
		"staging/probe.sh":   probe,
	})
	key := createGeneration(t, ns, generationOf("probe", "./staging", map[string]string{
		"TOKEN_FILE": token, "CONTROLLER_PID": fmt.Sprint(os.Getpid()), "STORAGE": storagePath,
	}))
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))
	data := configMap(g, ns, "probe")
	t.Log(data)
	g.Expect(data).To(HaveKeyWithValue("token", "denied"), "the controller's token file")
	g.Expect(data).To(HaveKeyWithValue("environBytes", "0"), "the controller's environment")
	g.Expect(data).To(HaveKeyWithValue("rootEntries", "0"), "the controller's filesystem through /proc")
	g.Expect(data).To(HaveKeyWithValue("checkouts", "0"), "the controller's checkouts")
	g.Expect(data).NotTo(HaveKeyWithValue("uid", "0"))
}

// One generation's commands cannot change what another generation reads, even from the same
// artifact: each run gets its own copy of the tree, and the controller's checkouts (which raw
// mode and the output cache come from) are out of reach.
func TestManifestGenerationCommandsCannotChangeAnotherTree(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:e101", map[string]string{
		"attacker/.flux.yaml": fluxYAML("sh ./attack.sh"),
		"attacker/attack.sh": `chmod -R u+w .. 2>/dev/null
echo tampered > ../victim/value.txt 2>/dev/null
echo tampered > ../raw/app.yaml 2>/dev/null
for d in "$STORAGE"/*; do
  chmod -R u+w "$d" 2>/dev/null
  echo tampered > "$d/victim/value.txt" 2>/dev/null
  echo tampered > "$d/raw/app.yaml" 2>/dev/null
done
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: attacker\n'
`,
		"victim/.flux.yaml": fluxYAML("sh ./show.sh"),
		"victim/show.sh":    `printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: victim\ndata:\n  value: %s\n' "$(cat value.txt)"` + "\n",
		"victim/value.txt":  "original\n",
		"raw/app.yaml":      appV1,
	})
	attacker := createGeneration(t, ns, generationOf("attacker", "./attacker", map[string]string{"STORAGE": storagePath}))
	g.Eventually(readyCondition(attacker), timeout).Should(HavePrefix("True|"))

	victim := createGeneration(t, ns, generationOf("victim", "./victim", nil))
	raw := createGeneration(t, ns, generationOf("raw", "./raw", nil))
	g.Eventually(readyCondition(victim), timeout).Should(HavePrefix("True|"))
	g.Eventually(readyCondition(raw), timeout).Should(HavePrefix("True|"))
	g.Expect(configMap(g, ns, "victim")).To(HaveKeyWithValue("value", "original"))
	g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "1"))
}

// A generator's children die with it, those that left its process group (setsid) or were
// double-forked included: after a successful run, and after a timeout.
func TestManifestGenerationKillsDetachedChildren(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	pids := proctest.SharedDir(t)
	const detach = `setsid sh -c 'echo $$ > "$PID_DIR/setsid-$1"; exec sleep 300' sh "$1" &
(sh -c 'echo $$ > "$PID_DIR/orphan-$1"; exec sleep 301' sh "$1" &)
until [ -s "$PID_DIR/setsid-$1" ] && [ -s "$PID_DIR/orphan-$1" ]; do sleep 0.1; done
`
	publish(t, ns, "repo", "main@sha1:e201", map[string]string{
		".flux.yaml":        fluxYAML("sh ./detach.sh ok; cat app.yaml"),
		"staging/detach.sh": detach,
		"staging/app.yaml":  appV1,
	})
	key := createGeneration(t, ns, generationOf("detach", "./staging", map[string]string{"PID_DIR": pids}))
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))

	publish(t, ns, "repo", "main@sha1:e202", map[string]string{
		".flux.yaml":        fluxYAML("sh ./detach.sh hang; sleep 600"),
		"staging/detach.sh": detach,
		"staging/app.yaml":  appV1,
	})
	g.Eventually(readyCondition(key), timeout).Should(And(HavePrefix("False|BuildFailed|"), ContainSubstring("timed out after 2s")))
	for _, f := range []string{"setsid-ok", "orphan-ok", "setsid-hang", "orphan-hang"} {
		pid := proctest.ReadPid(g, filepath.Join(pids, f))
		g.Eventually(func() bool { return proctest.Gone(pid) }, timeout).Should(BeTrue(), "the generator's child %s (%d) survived", f, pid)
	}
}

// Over the limits of a generation (testLimits): Stalled with a message naming the limit and the
// value, and the last applied state stays.
func TestManifestGenerationLimits(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	publish(t, ns, "repo", "main@sha1:e301", map[string]string{".flux.yaml": fluxYAML("cat app.yaml"), "staging/app.yaml": appV1})
	key := createGeneration(t, ns, generation)
	g.Eventually(readyCondition(key), timeout).Should(HavePrefix("True|"))

	six := "version: 1\ncommandUpdated:\n  generators:\n"
	for range 6 {
		six += "    - command: cat app.yaml\n"
	}
	const spaces = "    - command: head -c 3145728 /dev/zero | tr '\\0' ' '\n"
	for i, tc := range []struct {
		name, config, message string
	}{
		{"too many generators", six,
			".flux.yaml lists 6 generators, over the limit of 5 (--max-generators)"},
		{"too much output", "version: 1\ncommandUpdated:\n  generators:\n" + spaces + spaces,
			"the generators of .flux.yaml printed 6291456 bytes of output, over the limit of 4194304 (--max-generation-output-size)"},
		{"too many objects", fluxYAML(`i=0; while [ $i -lt 2001 ]; do printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n' $i; i=$((i+1)); done`),
			".flux.yaml gives 2001 objects, over the limit of 2000 (--max-objects)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rev := fmt.Sprintf("main@sha1:e4%02d", i)
			publish(t, ns, "repo", rev, map[string]string{".flux.yaml": tc.config, "staging/app.yaml": appV1})
			g.Eventually(func(g Gomega) string { return getGeneration(g, key).Status.LastAttemptedRevision }, timeout).Should(Equal(rev))
			g.Eventually(readyCondition(key), timeout).Should(Equal("False|BuildFailed|" + tc.message))
			g.Expect(conditions.IsStalled(getGeneration(g, key))).To(BeTrue())
			g.Expect(configMap(g, ns, "app")).To(HaveKeyWithValue("v", "1"), "the last applied state stays")
			g.Expect(getGeneration(g, key).Status.LastAppliedRevision).To(Equal("main@sha1:e301"))
		})
	}
}
