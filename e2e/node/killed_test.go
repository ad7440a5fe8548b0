//go:build node

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// bulkObjects: a namespace, an account that may write ConfigMaps there, and a ResourceSet that
// applies n ConfigMaps as that account.
func bulkObjects(ns string, n int) string {
	var inputs strings.Builder
	for i := range n {
		fmt.Fprintf(&inputs, "    - {id: %q}\n", fmt.Sprintf("%04d", i))
	}
	return accountObjects(ns) + fmt.Sprintf(`---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata: {name: bulk, namespace: %[1]s}
spec:
  serviceAccountName: applier
  inputs:
%[2]s  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: item-<< inputs.id >>
        namespace: %[1]s
      data:
        id: << inputs.id | quote >>
`, ns, inputs.String())
}

// controllerKilledMidApply: the process of the elected resourceset-controller replica is killed
// (SIGKILL, from the node) while it applies a ResourceSet of 1,000 ConfigMaps. The other replica,
// or the restarted container, takes the Lease once the dead one's expires (35 s, fluxcd/pkg's
// default), and the ResourceSet converges: 1,000
// ConfigMaps, each created once and never changed nor deleted after (a watch from before the
// first apply sees every event), and an inventory of 1,000.
func controllerKilledMidApply(ctx context.Context, t *testing.T, cluster *Cluster) {
	const ns, n = "bulk", 1000
	client := cluster.Node.Client
	kubectl(ctx, t, cluster, "create", "namespace", ns)
	w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pid, leader := leaderPID(ctx, t, cluster, "resourceset-controller")
	applyObjects(ctx, t, cluster, bulkObjects(ns, n))

	events := map[string][]watch.EventType{}
	added, killedAt := 0, 0
	var killed time.Time
	deadline := time.After(3 * time.Minute)
watching:
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of ConfigMaps ended")
			}
			cm, ok := e.Object.(*corev1.ConfigMap)
			if !ok || !strings.HasPrefix(cm.Name, "item-") {
				continue
			}
			events[cm.Name] = append(events[cm.Name], e.Type)
			if e.Type == watch.Added {
				added++
			}
			if added == 50 && killed.IsZero() {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatalf("killing the resourceset-controller (pid %d): %v", pid, err)
				}
				killed = time.Now()
				waitGone(t, pid)
				killedAt = countItems(ctx, t, cluster, ns)
				t.Logf("killed the resourceset-controller %s with %d of %d ConfigMaps applied", leader, killedAt, n)
				if killedAt >= n {
					t.Fatalf("the apply was over before the kill landed")
				}
			}
			if added == n {
				break watching
			}
		case <-deadline:
			t.Fatalf("%d of %d ConfigMaps after 3 minutes", added, n)
		}
	}
	waitReady(ctx, t, cluster, ns, "resourceset/bulk")
	t.Logf("converged %v after the kill", time.Since(killed).Round(time.Millisecond))
	// Events still in flight arrive within this second.
	for drain := time.After(time.Second); ; {
		select {
		case e := <-w.ResultChan():
			if cm, ok := e.Object.(*corev1.ConfigMap); ok && strings.HasPrefix(cm.Name, "item-") {
				events[cm.Name] = append(events[cm.Name], e.Type)
			}
			continue
		case <-drain:
		}
		break
	}
	if len(events) != n {
		t.Errorf("%d ConfigMaps seen, want %d", len(events), n)
	}
	for name, types := range events {
		if len(types) != 1 || types[0] != watch.Added {
			t.Errorf("%s: events %v, want one ADDED", name, types)
		}
	}
	if got := countItems(ctx, t, cluster, ns); got != n {
		t.Errorf("%d ConfigMaps, want %d", got, n)
	}
	inventory := kubectl(ctx, t, cluster, "-n", ns, "get", "resourceset/bulk", "-o", "jsonpath={range .status.inventory.entries[*]}{.id}{\"\\n\"}{end}")
	if entries := strings.Count(inventory, "_ConfigMap\n"); entries != n {
		t.Errorf("the inventory holds %d ConfigMaps, want %d", entries, n)
	}
	if pid2, _ := leaderPID(ctx, t, cluster, "resourceset-controller"); pid2 == pid {
		t.Errorf("the elected resourceset-controller's pid is still %d", pid)
	}
}

// leaderPID finds the process of the elected replica of a controller of deploy/default on this
// node, and its pod: the process whose command is /usr/local/bin/<controller> in its image and
// whose POD_NAME is the holder of the controller's Lease.
func leaderPID(ctx context.Context, t *testing.T, cluster *Cluster, controller string) (int, string) {
	t.Helper()
	pods, err := cluster.Node.Client.CoreV1().Pods("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + controller})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	_, leader := leaseOf(ctx, t, cluster, names)
	want := []byte("/usr/local/bin/" + controller + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []int
	for _, d := range dirs {
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.HasPrefix(cmdline, want) {
			continue
		}
		environ, err := os.ReadFile(d + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), []byte("\x00POD_NAME="+leader+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		found = append(found, pid)
	}
	if len(found) != 1 {
		t.Fatalf("%d processes of %s in pod %s: %v", len(found), controller, leader, found)
	}
	return found[0], leader
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil {
			return
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			return // a zombie: dead, not yet reaped by its shim
		}
	}
	t.Fatalf("process %d still alive 10 s after SIGKILL", pid)
}

// countItems counts the ConfigMaps item-* of ns.
func countItems(ctx context.Context, t *testing.T, cluster *Cluster, ns string) int {
	t.Helper()
	list, err := cluster.Node.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "item-") {
			count++
		}
	}
	return count
}
