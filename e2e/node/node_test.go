//go:build node

// The real node's tests run only with -tags node (`make test-node`, which `make test` runs after
// every module's tests): they need root, `make node-tools` and `make images`, and one package
// at a time (-p 1), since a host runs one node.

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
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// TestPodRuns starts a cluster with a real node, runs a pod of the manifest-generator's image
// (imported from `make images`, never pulled) to completion and reads its logs through the API
// server; withCluster then stops the node and checks that the host is as it was.
func TestPodRuns(t *testing.T) {
	withCluster(t, false, func(ctx context.Context, cluster *Cluster) {
		start := time.Now()
		logs := runPod(ctx, t, cluster, "generator", "id; git --version")
		t.Logf("pod Succeeded %v after create", time.Since(start).Round(time.Millisecond))
		for _, want := range []string{"uid=65532(nonroot) gid=65532(nonroot)", "git version "} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
	})
}

// TestServiceDNS: with CoreDNS, a pod finds a Service by its DNS name and reaches the pod behind
// it through kube-proxy: busybox's httpd serves /etc, and wget fetches /passwd by the Service's
// name.
func TestServiceDNS(t *testing.T) {
	withCluster(t, true, func(ctx context.Context, cluster *Cluster) {
		client := cluster.Node.Client
		labels := map[string]string{"app": "web"}
		server := podRunning("web", "httpd -f -v -p 8080 -h /etc")
		server.Labels = labels
		server.Spec.RestartPolicy = corev1.RestartPolicyAlways
		server.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, server, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		service := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		}
		created, err := client.CoreV1().Services("default").Create(ctx, service, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if podReady(p) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("server pod not ready: %+v", p.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
		start := time.Now()
		// kube-proxy programs the Service's endpoint a moment after the pod is Ready: the client
		// retries for up to 15 s, as clients of a new Service do.
		logs := runPod(ctx, t, cluster, "client", "nslookup web.default.svc.cluster.local && "+
			"for i in $(seq 30); do wget -qO- http://web.default.svc.cluster.local/passwd && exit 0; sleep 0.5; done; exit 1")
		t.Logf("client pod Succeeded %v after create", time.Since(start).Round(time.Millisecond))
		for _, want := range []string{created.Spec.ClusterIP, "nonroot:x:65532"} {
			if !strings.Contains(logs, want) {
				t.Errorf("client's logs lack %q:\n%s", want, logs)
			}
		}
	})
}

// withCluster starts a cluster with a real node (and CoreDNS when dns) that runs the
// manifest-generator's image, runs test, then stops the node and checks that the host is as it
// was before (runCluster).
func withCluster(t *testing.T, dns bool, test func(ctx context.Context, cluster *Cluster)) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	archive := images.Archive(filepath.Join(bin, "images"), "manifest-generator")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("%s not found: run `make images`", archive)
	}
	runCluster(t, ClusterOptions{Options: Options{BinDir: bin, Images: []string{archive}, DNS: dns}}, 5*time.Minute, test)
}

// runCluster starts a cluster of opts with a real node (its StateDir and Log are the test's),
// runs test within timeout, then stops the node and checks that the host is as it was before:
// sysctls, nftables tables, network interfaces, mounts, cgroups, directories and processes.
func runCluster(t *testing.T, opts ClusterOptions, timeout time.Duration, test func(ctx context.Context, cluster *Cluster)) {
	if err := checkBinaries(opts.BinDir, opts.DNS); err != nil {
		t.Fatal(err)
	}
	if err := CleanStale(); err != nil {
		t.Fatal(err)
	}
	before := snapshotHost(t)

	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	opts.StateDir, opts.Log = t.TempDir(), t.Logf
	cluster, err := StartCluster(ctx, opts)
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

	test(ctx, cluster)

	stopped = true
	start = time.Now()
	if err := cluster.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	t.Logf("stopped and undone in %v", time.Since(start).Round(time.Millisecond))
	before.compare(t, snapshotHost(t))
	if points, _ := mountPoints(cluster.Node.StateDir); len(points) > 0 {
		t.Errorf("still mounted under the state directory: %v", points)
	}
}

// podRunning is a pod of the manifest-generator's image (busybox and git) running sh -c script.
func podRunning(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    name,
				Image:   images.Ref("manifest-generator"),
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runPod runs sh -c script in a pod (podRunning), waits until it Succeeded and returns its
// logs, read through the API server as `kubectl logs` does.
func runPod(ctx context.Context, t *testing.T, cluster *Cluster, name, script string) string {
	t.Helper()
	client := cluster.Node.Client
	if _, err := client.CoreV1().Pods("default").Create(ctx, podRunning(name, script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	for {
		var err error
		got, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s still %s: %+v\nkubelet log:\n%s", name, got.Status.Phase, got.Status, tail(cluster.Node.kubelet.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs, err := client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod %s's logs through the API server: %v", name, err)
	}
	if got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s %s: %+v\nlogs:\n%s", name, got.Status.Phase, got.Status.ContainerStatuses, logs)
	}
	return string(logs)
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
