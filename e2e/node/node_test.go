package node

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// TestMissingBinary: without the node's binaries Start fails, naming the make target, before it
// changes anything on the host.
func TestMissingBinary(t *testing.T) {
	_, err := Start(t.Context(), Options{BinDir: t.TempDir(), StateDir: t.TempDir(), Kubeconfig: "unused"})
	if err == nil || !strings.Contains(err.Error(), "make node-tools") {
		t.Fatalf("Start with an empty bin directory: got %v, want an error naming `make node-tools`", err)
	}
	if _, err := os.Stat(runDir); err == nil {
		t.Fatalf("%s exists after a Start that failed its checks", runDir)
	}
}

// TestPodRuns starts a cluster with a real node, runs a pod of the manifest-generator's image
// (imported from `make images`, never pulled) to completion, reads its logs through the API
// server, then stops the node and checks that the host is as it was.
func TestPodRuns(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	if err := checkBinaries(bin, false); err != nil {
		t.Fatal(err)
	}
	archive := images.Archive(filepath.Join(bin, "images"), "manifest-generator")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("%s not found: run `make images`", archive)
	}
	if err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	before := snapshotHost(t)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cluster, err := StartCluster(ctx, Options{BinDir: bin, StateDir: t.TempDir(), Images: []string{archive}, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := cluster.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	t.Logf("cluster with a Ready node started in %v", time.Since(start).Round(time.Millisecond))

	client := cluster.Node.Client
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "generator", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "generator",
				Image:   images.Ref("manifest-generator"),
				Command: []string{"/bin/sh", "-c", "id; git --version"},
			}},
		},
	}
	start = time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	for {
		got, err = client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pod still %s: %+v\nkubelet log:\n%s", got.Status.Phase, got.Status, tail(cluster.Node.kubelet.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("pod %s %v after create", got.Status.Phase, time.Since(start).Round(time.Millisecond))
	logs, err := client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod logs through the API server: %v", err)
	}
	if got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %+v\nlogs:\n%s", got.Status.Phase, got.Status.ContainerStatuses, logs)
	}
	for _, want := range []string{"uid=65532(nonroot) gid=65532(nonroot)", "git version "} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}

	stopped = true
	start = time.Now()
	if err := cluster.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	t.Logf("stopped and undone in %v", time.Since(start).Round(time.Millisecond))
	after := snapshotHost(t)
	before.compare(t, after)
	if points, _ := mountPoints(cluster.Node.StateDir); len(points) > 0 {
		t.Errorf("still mounted under the state directory: %v", points)
	}
}

// hostSnapshot is what a node may change on the host.
type hostSnapshot struct {
	sysctls   map[string]string
	nftTables []string
	links     []string
	mounts    []string
	cgroups   []string
	dirs      []string
	processes []string
}

func snapshotHost(t *testing.T) hostSnapshot {
	t.Helper()
	s := hostSnapshot{sysctls: map[string]string{}}
	for _, k := range touchedSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			s.sysctls[k] = strings.TrimSpace(string(v))
		}
	}
	var err error
	if s.nftTables, err = nftTables(); err != nil {
		t.Fatal(err)
	}
	if s.links, err = links(); err != nil {
		t.Fatal(err)
	}
	// Only where the node's parts mount by default: the tests of other packages may mount
	// elsewhere meanwhile.
	if s.mounts, err = mountPoints(runDir, "/run/netns", "/var/lib/kubelet", "/var/lib/containerd", "/run/containerd"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.mounts)
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, cgroupRoot)); err == nil {
			s.cgroups = append(s.cgroups, filepath.Join(h, cgroupRoot))
		}
	}
	for _, d := range append(hostDirs, runDir) {
		if _, err := os.Lstat(d); err == nil {
			s.dirs = append(s.dirs, d)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		// A killed containerd shim is reparented to the host's init, which reaps it a moment
		// later: a zombie holds nothing of the node.
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(stat), ") Z ") {
			continue
		}
		switch c := strings.TrimSpace(string(comm)); c {
		case "containerd", "containerd-shim", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "kube-scheduler", "runc", "pause":
			s.processes = append(s.processes, c+" "+e.Name())
		}
	}
	return s
}

func (before hostSnapshot) compare(t *testing.T, after hostSnapshot) {
	t.Helper()
	for k, v := range before.sysctls {
		if after.sysctls[k] != v {
			t.Errorf("sysctl %s: %s before, %s after", k, v, after.sysctls[k])
		}
	}
	for _, c := range []struct {
		what          string
		before, after []string
	}{
		{"nftables tables", before.nftTables, after.nftTables},
		{"network interfaces", before.links, after.links},
		{"mounts", before.mounts, after.mounts},
		{"cgroups", before.cgroups, after.cgroups},
		{"directories", before.dirs, after.dirs},
		{"processes", before.processes, after.processes},
	} {
		var added, removed []string
		for _, a := range c.after {
			if !slices.Contains(c.before, a) {
				added = append(added, a)
			}
		}
		for _, b := range c.before {
			if !slices.Contains(c.after, b) {
				removed = append(removed, b)
			}
		}
		if len(added) > 0 || len(removed) > 0 {
			t.Errorf("%s changed: added %v, removed %v", c.what, added, removed)
		}
	}
}
