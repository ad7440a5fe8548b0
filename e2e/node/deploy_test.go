//go:build node

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
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

// TestDeployDefault runs deploy/default as users run it: the four images (built from bin/ by
// e2e/images, imported into the node), deploy/default rendered by kustomize through an overlay
// that points it at them, applied server-side with kubectl, and every Deployment's pod Running
// and Ready, with ServiceAccount tokens and the API server reached through the kubernetes
// Service. The namespace enforces the baseline Pod Security level and warns at restricted: the
// pods were admitted, and kubectl warns about none.
//
// Then the deployed system's tests run on that one cluster, each in namespaces of its own, in
// this order: those that kill or scale the controllers come last, after the check that no
// container restarted.
func TestDeployDefault(t *testing.T) {
	withDeployDefault(t, deployOptions{Flux: images.Flux}, func(ctx context.Context, cluster *Cluster) {
		for _, test := range []struct {
			name string
			run  func(context.Context, *testing.T, *Cluster)
		}{
			{"FromGit", deployedFromGit},
			{"TrustBoundary", trustBoundary},
			{"SessionPodAttacks", sessionPodAttacks},
			{"TenantURLsRefused", tenantURLsRefused},
			{"Dashboard", deployedDashboard},
			{"FluxKustomizeController", fluxKustomizeController},
		} {
			t.Run(test.name, func(t *testing.T) { test.run(ctx, t, cluster) })
		}
		noRestarts(ctx, t, cluster, "sluice-system")
		t.Run("ControllerKilledMidApply", func(t *testing.T) { controllerKilledMidApply(ctx, t, cluster) })
		t.Run("ControllersFailover", func(t *testing.T) { controllersFailover(ctx, t, cluster) })
		t.Run("SourceControllerFailover", func(t *testing.T) { sourceControllerFailover(ctx, t, cluster) })
		t.Run("SharedStoreFailover", func(t *testing.T) { sharedStoreFailover(ctx, t, cluster) })
	})
}

// deployOptions change what withDeployDefault does.
type deployOptions struct {
	// Flux are images of images.Flux to build and import as well.
	Flux []string
	// Timeout bounds the cluster's life (20 minutes when zero).
	Timeout time.Duration
}

// withDeployDefault starts a cluster whose pods reach the API server (InClusterAPI) and CoreDNS,
// applies deploy/default with the images of e2e/images, waits until every controller is Ready
// and holds its Lease, and runs test.
func withDeployDefault(t *testing.T, deploy deployOptions, test func(ctx context.Context, cluster *Cluster)) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	start := time.Now()
	built, err := images.Build(images.Options{Bin: bin, Out: filepath.Join(bin, "images"), Controllers: append(slices.Clone(images.Controllers), deploy.Flux...)})
	if err != nil {
		t.Fatalf("building the images: %v", err)
	}
	var archives []string
	for _, b := range built {
		archives = append(archives, b.Path)
	}
	t.Logf("%d images built in %v", len(archives), time.Since(start).Round(time.Millisecond))
	rendered := renderDeployDefault(t, root, bin)

	opts := ClusterOptions{Options: Options{BinDir: bin, Images: archives, DNS: true}, InClusterAPI: true}
	timeout := deploy.Timeout
	if timeout == 0 {
		timeout = 20 * time.Minute
	}
	runCluster(t, opts, timeout, func(ctx context.Context, cluster *Cluster) {
		start := time.Now()
		out := kubectl(ctx, t, cluster, "apply", "--server-side", "--field-manager=sluice-e2e", "-f", rendered)
		// Every pod meets the restricted level: the tenants' commands run in session pods of
		// their own, no runner container is root with capabilities.
		if warnings := podSecurityWarnings(out); len(warnings) != 0 {
			t.Errorf("want no restricted warning; kubectl printed:\n%s", out)
		}
		waitDeploymentsReady(ctx, t, cluster, "sluice-system", images.Controllers)
		t.Logf("every Deployment's pod Running and Ready %v after apply", time.Since(start).Round(time.Millisecond))
		// Each controller reached the API server with its token and its rights: it holds its
		// leader election Lease.
		waitLeases(ctx, t, cluster, "sluice-system", len(images.Controllers))
		test(ctx, cluster)
	})
}

// kubectl runs bin/kubectl with the cluster's administrator and returns its output (stdout, then
// stderr, where the warnings are).
func kubectl(ctx context.Context, t *testing.T, cluster *Cluster, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.Node.opts.BinDir, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// noRestarts fails when a container of ns restarted.
func noRestarts(ctx context.Context, t *testing.T, cluster *Cluster, ns string) {
	t.Helper()
	pods, err := cluster.Node.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				t.Errorf("container %s of %s restarted %d times:\n%s", c.Name, p.Name, c.RestartCount, describeNamespace(cluster, ns))
				return
			}
		}
	}
}

// renderDeployDefault renders deploy/default's overlay with the images of e2e/images
// (RenderDeployDefault) into a directory of the test and returns the rendered file.
func renderDeployDefault(t *testing.T, root, bin string) string {
	t.Helper()
	rendered, err := RenderDeployDefault(root, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return rendered
}

// podSecurityWarnings are the lines of kubectl's output that warn of a Pod Security violation.
func podSecurityWarnings(output string) []string {
	var w []string
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, "would violate PodSecurity") {
			w = append(w, line)
		}
	}
	return w
}

// waitDeploymentsReady waits until each named Deployment of ns has all its replicas Ready. On
// timeout it fails with each pod's state, its containers' last logs and the namespace's events.
func waitDeploymentsReady(ctx context.Context, t *testing.T, cluster *Cluster, ns string, names []string) {
	t.Helper()
	client := cluster.Node.Client
	for {
		ready := 0
		for _, name := range names {
			d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Spec.Replicas != nil &&
				d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas {
				ready++
			}
		}
		if ready == len(names) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d Deployments Ready:\n%s", ready, len(names), describeNamespace(cluster, ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitLeases waits until n Leases of ns have a holder, each a pod of ns.
func waitLeases(ctx context.Context, t *testing.T, cluster *Cluster, ns string, n int) {
	t.Helper()
	client := cluster.Node.Client
	for {
		var held []string
		leases, err := client.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, l := range leases.Items {
				if l.Spec.HolderIdentity == nil {
					continue
				}
				if _, err := client.CoreV1().Pods(ns).Get(ctx, strings.Split(*l.Spec.HolderIdentity, "_")[0], metav1.GetOptions{}); err == nil {
					held = append(held, l.Name)
				}
			}
		}
		if len(held) == n {
			t.Logf("leases held by the controllers' pods: %v", held)
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d Leases held (%v):\n%s", len(held), n, held, describeNamespace(cluster, ns))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// describeNamespace tells why pods are not Ready: their phase and containers' states, the last
// lines of each container's logs and the namespace's events.
func describeNamespace(cluster *Cluster, ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := cluster.Node.Client
	var b strings.Builder
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	tail := int64(20)
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s\n", p.Name, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s ready=%v restarts=%d state=%+v last=%+v\n", c.Name, c.Ready, c.RestartCount, c.State, c.LastTerminationState)
			for _, previous := range []bool{false, true} {
				logs, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail, Previous: previous}).DoRaw(ctx)
				if err == nil && len(logs) > 0 {
					fmt.Fprintf(&b, "  logs (previous=%v):\n%s\n", previous, logs)
				}
			}
		}
	}
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s/%s %s %s: %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
	return b.String()
}

// kubectlMay runs bin/kubectl with the cluster's administrator and returns its output, and its
// error's when it failed.
func kubectlMay(ctx context.Context, cluster *Cluster, args ...string) string {
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.Node.opts.BinDir, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s(%v)", out, err)
	}
	return string(out)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
