//go:build node

package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// The attacks of sessionPodAttacks, each a .flux.yaml generator of a tenant of its own. They
// report what they saw as the ConfigMap "observed" (boundaryReport's kv), or fail.
const (
	// attackSurvivor leaves a process behind the hard way (testdata/attacks/detach.c): out of its
	// process group, its main thread ended, so that it shows as a zombie while its thread runs.
	attackSurvivor = boundaryReport + `chmod +x ./detach
kv survivor "$(./detach)"
`
	// attackSharedMemory leaves a 512 MiB System V segment behind (testdata/attacks/shmhog.c).
	attackSharedMemory = boundaryReport + `chmod +x ./shmhog
kv segment "$(./shmhog 512)"
kv segments "$(tail -n +2 /proc/sysvipc/shm | wc -l)"
`
	// attackBig is a generator that needs 600 MiB: dd's buffer.
	attackBig = boundaryReport + `kv dd "$(dd if=/dev/zero of=/dev/null bs=600M count=1 2>&1 | tail -n1)"
`
	// attackMemory allocates until it is stopped: tail keeps the one endless line of /dev/zero.
	attackMemory = `tail /dev/zero
`
	// attackForks is a fork bomb.
	attackForks = `f() { f | f & }
f
sleep 60
`
	// attackHiddenDisk writes 1,250 MiB into a directory it makes unreadable to itself, in files
	// of 250 MiB (a file may take 256 MiB, RLIMIT_FSIZE).
	attackHiddenDisk = `mkdir hidden && chmod 300 hidden
for i in 1 2 3 4 5; do dd if=/dev/zero of=hidden/fill-$i bs=1M count=250 || exit 1; done
`
	// attackUnlinkedDisk writes 1,250 MiB into files deleted while open.
	attackUnlinkedDisk = `exec 3>f3 4>f4 5>f5 6>f6 7>f7 && rm f3 f4 f5 f6 f7
dd if=/dev/zero bs=1M count=250 >&3 && dd if=/dev/zero bs=1M count=250 >&4 && dd if=/dev/zero bs=1M count=250 >&5 &&
  dd if=/dev/zero bs=1M count=250 >&6 && dd if=/dev/zero bs=1M count=250 >&7
`
	// attackHugeOutput prints about 60 MB of YAML made of tiny nodes, under --max-output-size.
	attackHugeOutput = `echo 'apiVersion: v1'
echo 'kind: List'
echo 'items:'
yes a | sed 's/^/- /' | head -c 60000000
`
)

// sessionPodAttacks: tenants' attacks against the session pods of deploy/default, several
// tenants at once, each a ManifestGeneration of a namespace of its own; none affects another
// tenant, the controller, or what runs after it.
//   - A process that leaves its process group and ends its main thread is gone when its session
//     ends (no such process on the node), while the sessions beside it ran.
//   - A 512 MiB System V segment does not outlive its session: the node's shared memory falls
//     back once the sessions end, and another tenant's 600 MiB generator then succeeds.
//   - 1,250 MiB written through an unreadable directory or a file deleted while open stop at the
//     session's disk, and the condition names --session-disk; a memory hog's names
//     --session-memory; a fork bomb fails its own session only.
//   - Four generators printing 60 MB of tiny YAML nodes fail with the controller's decode
//     budget, and the controller does not restart.
func sessionPodAttacks(ctx context.Context, t *testing.T, cluster *Cluster) {
	began := time.Now()
	bins := compileAttacks(t)
	srv := testserver.NewGitServer(t, testserver.Options{})
	gitURL := relayGitServer(t, cluster, srv)
	tenant := func(ns, command string, files map[string]string, timeout string) {
		t.Helper()
		repo := srv.NewRepo(t, ns)
		all := map[string]string{".flux.yaml": fluxYAML(command)}
		for k, v := range files {
			all[k] = v
		}
		repo.Commit(t, "generator", all)
		gen := generationObject(ns, false, nil)
		if timeout != "" {
			gen += "  timeout: " + timeout + "\n"
		}
		applyObjects(ctx, t, cluster, tenantObjects(ns, gitURL(repo), repo.CurrentBranch(t))+"---\n"+gen)
	}
	// First, on a quiet cluster, what a session pod costs to start: one tenant's sessions, one
	// after another (each a new spec.env, which the output cache does not know).
	tenant("session-start", boundaryReport, nil, "")
	waitReady(ctx, t, cluster, "session-start", "manifestgeneration/app")
	for i := 2; i <= 6; i++ {
		kubectl(ctx, t, cluster, "-n", "session-start", "patch", "manifestgeneration/app", "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"env":[{"name":"RUN","value":"%d"}]}}`, i))
		kubectl(ctx, t, cluster, "-n", "session-start", "wait", "--timeout=120s", "manifestgeneration/app",
			fmt.Sprintf("--for=jsonpath={.status.observedGeneration}=%d", i))
	}
	logSessionStarts(ctx, t, cluster, "session-start/app")

	shmBefore := hostShmem(t)

	// The survivor, the segment and the limits' attacks, all at once.
	tenant("attack-survivor", attackSurvivor, map[string]string{"detach": bins["detach"]}, "")
	tenant("attack-shm", attackSharedMemory, map[string]string{"shmhog": bins["shmhog"]}, "")
	tenant("attack-memory", attackMemory, nil, "2m")
	tenant("attack-forks", attackForks, nil, "20s")
	tenant("attack-hidden-disk", attackHiddenDisk, nil, "2m")
	tenant("attack-unlinked-disk", attackUnlinkedDisk, nil, "2m")

	waitReady(ctx, t, cluster, "attack-survivor", "manifestgeneration/app")
	survivor := observed(ctx, t, cluster, "attack-survivor")["survivor"]
	t.Logf("the survivor's pid and state in its session: %s", survivor)
	if !strings.HasSuffix(survivor, " Z") {
		t.Errorf("the detached process was not a zombie with a running thread in its session: %q", survivor)
	}
	waitReady(ctx, t, cluster, "attack-shm", "manifestgeneration/app")
	shm := observed(ctx, t, cluster, "attack-shm")
	t.Logf("the session's segment %s, segments it saw: %s", shm["segment"], shm["segments"])
	if shm["segments"] != "1" {
		t.Errorf("the shm session saw %q segments, want its own one", shm["segments"])
	}
	for ns, want := range map[string]string{
		"attack-memory":        "--session-memory",
		"attack-forks":         "",
		"attack-hidden-disk":   "--session-disk",
		"attack-unlinked-disk": "--session-disk",
	} {
		msg := waitBuildFailed(ctx, t, cluster, ns)
		t.Logf("%s: %s", ns, msg)
		if want != "" && !strings.Contains(msg, want) {
			t.Errorf("%s failed without naming %s: %s", ns, want, msg)
		}
	}
	// Nothing of those sessions is left on the node: no process of the survivor, no segment. The
	// failed ones are suspended first: they would be retried.
	for _, ns := range []string{"attack-memory", "attack-forks", "attack-hidden-disk", "attack-unlinked-disk"} {
		kubectl(ctx, t, cluster, "-n", ns, "patch", "manifestgeneration/app", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	}
	waitNoProcess(t, "sluice-survivor", 30*time.Second)
	waitSessionPodsGone(ctx, t, cluster, 60*time.Second)
	if after := hostShmem(t); after > shmBefore+256<<20 {
		t.Errorf("the node's shared memory is %d MiB after the sessions ended, %d MiB before them: a segment outlived its session", after>>20, shmBefore>>20)
	} else {
		t.Logf("the node's shared memory: %d MiB before the sessions, %d MiB after", shmBefore>>20, after>>20)
	}

	// Then a tenant whose generator needs 600 MiB, and four that print 60 MB of tiny nodes.
	tenant("attack-big", attackBig, nil, "")
	var huge []string
	for i := range 4 {
		ns := fmt.Sprintf("attack-output-%d", i)
		huge = append(huge, ns)
		tenant(ns, attackHugeOutput, nil, "2m")
	}
	waitReady(ctx, t, cluster, "attack-big", "manifestgeneration/app")
	t.Logf("attack-big: dd said %q", observed(ctx, t, cluster, "attack-big")["dd"])
	for _, ns := range huge {
		msg := waitBuildFailed(ctx, t, cluster, ns)
		t.Logf("%s: %s", ns, msg)
		if !strings.Contains(msg, "over the limit") {
			t.Errorf("%s failed without naming the decode budget it passed: %s", ns, msg)
		}
	}
	noRestarts(ctx, t, cluster, "sluice-system")
	t.Logf("the attacks ran and were checked in %v", time.Since(began).Round(time.Second))
	logSessionStarts(ctx, t, cluster, "")
}

// logSessionStarts reports what the session pods of owner ("namespace/name", or "" for all)
// took to start: from the controller's decision to the session's first answer (pod created,
// scheduled, started, its session process started by an exec), as the manifest-generator logs
// each ("session started", startSeconds).
func logSessionStarts(ctx context.Context, t *testing.T, cluster *Cluster, owner string) {
	t.Helper()
	// Every replica's: the elected one ran the sessions.
	out := kubectl(ctx, t, cluster, "-n", "sluice-system", "logs", "-l", "app.kubernetes.io/name=manifest-generator", "-c", "manager", "--tail=-1")
	var starts []float64
	for _, line := range strings.Split(out, "\n") {
		var entry struct {
			Msg          string  `json:"msg"`
			Owner        string  `json:"owner"`
			InPod        bool    `json:"inPod"`
			StartSeconds float64 `json:"startSeconds"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "session started" && entry.InPod && (owner == "" || entry.Owner == owner) {
			starts = append(starts, entry.StartSeconds)
		}
	}
	if len(starts) == 0 {
		t.Errorf("the manifest-generator logged no session pod's start of %q", owner)
		return
	}
	sort.Float64s(starts)
	of := "all the deployed tests' sessions, under the attacks' load"
	if owner != "" {
		of = owner + ", one after another on a quiet cluster"
	}
	t.Logf("session pods started in %.2fs (median) of %d (%s), fastest %.2fs, slowest %.2fs",
		starts[len(starts)/2], len(starts), of, starts[0], starts[len(starts)-1])
}

// compileAttacks builds the C programs of testdata/attacks, static, for the tenants to commit.
func compileAttacks(t *testing.T) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("the attacks are C programs: gcc is needed (apt-get install gcc libc6-dev)")
	}
	out := map[string]string{}
	dir := t.TempDir()
	for _, name := range []string{"detach", "shmhog"} {
		bin := filepath.Join(dir, name)
		if b, err := exec.Command("gcc", "-static", "-O2", "-pthread", "-o", bin, filepath.Join("testdata", "attacks", name+".c")).CombinedOutput(); err != nil {
			t.Fatalf("compiling %s: %v\n%s", name, err, b)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(data)
	}
	return out
}

// observed is the ConfigMap "observed" a tenant's generator printed.
func observed(ctx context.Context, t *testing.T, cluster *Cluster, ns string) map[string]string {
	t.Helper()
	cm, err := cluster.Node.Client.CoreV1().ConfigMaps(ns).Get(ctx, "observed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ConfigMap of %s: %v", ns, err)
	}
	return cm.Data
}

// waitBuildFailed waits until the ManifestGeneration "app" of ns is not Ready for a failed build,
// and returns its message.
func waitBuildFailed(ctx context.Context, t *testing.T, cluster *Cluster, ns string) string {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		out := kubectlMay(ctx, cluster, "-n", ns, "get", "manifestgeneration/app", "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="Ready")].reason}|{.status.conditions[?(@.type=="Ready")].message}`)
		parts := strings.SplitN(out, "|", 3)
		if len(parts) == 3 && parts[0] == "False" && parts[1] == "BuildFailed" {
			return parts[2]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/manifestgeneration/app did not fail its build: %s\n%s", ns, out, describeNamespace(cluster, "sluice-system"))
		}
		time.Sleep(time.Second)
	}
}

// waitNoProcess waits until no process of the node is called comm.
func waitNoProcess(t *testing.T, comm string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pids := processesCalled(comm)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v called %s are still running %v after their session ended", pids, comm, timeout)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// processesCalled lists the processes (and threads) of the host called comm.
func processesCalled(comm string) []int {
	var pids []int
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/comm")
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == comm {
			pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitSessionPodsGone waits until no session pod is left in any namespace.
func waitSessionPodsGone(ctx context.Context, t *testing.T, cluster *Cluster, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pods, err := cluster.Node.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "generator.toolkit.fluxcd.io/session=true"})
		if err == nil && len(pods.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			if pods != nil {
				for _, p := range pods.Items {
					names = append(names, p.Namespace+"/"+p.Name+" "+string(p.Status.Phase))
				}
			}
			t.Errorf("session pods are left %v after their sessions: %v %v", timeout, names, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// hostShmem is the node's shared memory (Shmem of /proc/meminfo: System V segments and tmpfs
// files), in bytes.
func hostShmem(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Shmem:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no Shmem in /proc/meminfo")
	return 0
}
