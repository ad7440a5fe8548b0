//go:build node

package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// sourceControllerFailover: the source-controller with two replicas and leader election, as
// a user scales deploy/default. Only the leader is behind the Service (its pod carries the label
// the Service selects), so a consumer never reaches the standby, whose emptyDir holds no
// artifact. The leader pod is deleted: the standby (or the pod that replaces the deleted one)
// takes the Lease, labels itself, fetches the
// GitRepository again into its own storage with its own URL-signing key and publishes the new
// URL; a consumer that reads status.artifact.url and downloads it, as Flux's controllers do,
// gets the artifact again.
func sourceControllerFailover(ctx context.Context, t *testing.T, cluster *Cluster) {
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "app")
	repo.Commit(t, "app", map[string]string{"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n"})
	gitURL := relayGitServer(t, cluster, srv)
	applyObjects(ctx, t, cluster, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: failover, namespace: sluice-system}
spec:
  interval: 1m
  url: %s
  ref: {branch: %s}
`, gitURL(repo), repo.CurrentBranch(t)))
	waitReady(ctx, t, cluster, "sluice-system", "gitrepository/failover")

	kubectl(ctx, t, cluster, "-n", "sluice-system", "scale", "deployment/source-controller", "--replicas=2")
	pods := waitControllerPods(ctx, t, cluster, "source-controller", 2)
	lease, leader := leaseOf(ctx, t, cluster, pods)
	t.Logf("two replicas Ready; %s holds the Lease %s", leader, lease)

	consumer := startConsumer(ctx, t, cluster, failoverRepo)
	time.Sleep(5 * time.Second)
	if before := consumer.results(); len(before) < 20 || failures(before) > 0 {
		t.Fatalf("with two replicas, before the failover: %d downloads, %d failed (%s)\n%s", len(before), failures(before), summarize(before), describeEndpoints(cluster))
	}

	deleted := time.Now()
	kubectl(ctx, t, cluster, "-n", "sluice-system", "delete", "pod", leader, "--wait=false")
	holder := waitLeaseTaken(ctx, t, cluster, lease, leader, deleted)
	tookOver := time.Since(deleted)
	// The standby, or the pod that replaces the deleted one if it tries first.
	took := "the standby"
	if holder != otherPod(pods, leader) {
		took = "the deleted pod's replacement"
	}
	// The first artifact the new leader serves: downloads before it took the Lease may have
	// reached the old one, still terminating.
	served := consumer.waitServed(t, deleted.Add(tookOver), 2*time.Minute)
	consumer.stop()
	gap := consumer.between(deleted, served)
	t.Logf("%s took the Lease %v after the leader's pod was deleted; the consumer downloaded the artifact again %v after (%d failed downloads between: %s)",
		took, tookOver.Round(time.Millisecond), served.Sub(deleted).Round(time.Millisecond), failures(gap), summarize(gap))
	// A deleted pod stops gracefully and releases the Lease: the next leader does not wait
	// for it to expire (--leader-election-lease-duration, 35 s).
	if tookOver > 20*time.Second {
		t.Errorf("the Lease was taken %v after the delete: the deleted leader did not release it", tookOver)
	}
}

// waitLeaseTaken waits until a pod other than leader holds the Lease, and returns that pod;
// it fails a minute after since.
func waitLeaseTaken(ctx context.Context, t *testing.T, cluster *Cluster, lease, leader string, since time.Time) string {
	t.Helper()
	for {
		l, err := cluster.Node.Client.CoordinationV1().Leases("sluice-system").Get(ctx, lease, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			if holder := strings.Split(*l.Spec.HolderIdentity, "_")[0]; holder != leader && holder != "" {
				return holder
			}
		}
		if ctx.Err() != nil || time.Since(since) > time.Minute {
			t.Fatalf("the Lease %s is still held by %s a minute after its pod was deleted", lease, leader)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaseOf returns the name of the leader election Lease held by one of pods, and its holder.
func leaseOf(ctx context.Context, t *testing.T, cluster *Cluster, pods []string) (string, string) {
	t.Helper()
	leases, err := cluster.Node.Client.CoordinationV1().Leases("sluice-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil {
			continue
		}
		holder := strings.Split(*l.Spec.HolderIdentity, "_")[0]
		for _, p := range pods {
			if p == holder {
				return l.Name, holder
			}
		}
	}
	t.Fatalf("no Lease held by %v", pods)
	return "", ""
}

func otherPod(pods []string, pod string) string {
	for _, p := range pods {
		if p != pod {
			return p
		}
	}
	return ""
}

// download is one attempt of the consumer.
type download struct {
	at     time.Time     // when it started
	took   time.Duration // until it ended
	result string        // "200", another status, or the error
}

// failoverRepo is the GitRepository of the failover tests.
var failoverRepo = client.ObjectKey{Namespace: "sluice-system", Name: "failover"}

// consumer downloads the artifacts of GitRepositories in turn, one every 100 ms: it reads its
// status.artifact.url and fetches it from the host, at the Service's cluster IP.
type consumer struct {
	mu     sync.Mutex
	done   []download
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startConsumer(ctx context.Context, t *testing.T, cluster *Cluster, repos ...client.ObjectKey) *consumer {
	t.Helper()
	svc, err := cluster.Node.Client.CoreV1().Services("sluice-system").Get(ctx, "source-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &consumer{cancel: cancel}
	// A connection per download, so that each reaches whichever pod the Service picks then.
	httpClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			started := time.Now()
			result := fetchArtifact(ctx, cluster.Env.Client, httpClient, svc.Spec.ClusterIP, repos[i%len(repos)])
			if ctx.Err() != nil {
				return // stopped mid-download: not a result
			}
			c.record(started, result)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return c
}

func fetchArtifact(ctx context.Context, c client.Client, httpClient *http.Client, serviceIP string, key client.ObjectKey) string {
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"})
	if err := c.Get(ctx, key, repo); err != nil {
		return "reading the GitRepository: " + err.Error()
	}
	raw, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "url")
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return fmt.Sprintf("no artifact URL (%q)", raw)
	}
	u.Host = serviceIP
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err.Error()
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "connection: " + err.Error()
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "reading: " + err.Error()
	}
	return fmt.Sprint(resp.StatusCode)
}

func (c *consumer) record(started time.Time, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = append(c.done, download{at: started, took: time.Since(started), result: result})
}

func (c *consumer) results() []download {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]download(nil), c.done...)
}

// waitServed waits until a download started after since succeeds, and returns when.
func (c *consumer) waitServed(t *testing.T, since time.Time, timeout time.Duration) time.Time {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, d := range c.results() {
			if d.at.After(since) && d.result == "200" {
				return d.at
			}
		}
	}
	t.Fatalf("no download succeeded within %v of the failover: %s", timeout, summarize(c.between(since, time.Now())))
	return time.Time{}
}

func (c *consumer) between(from, to time.Time) []download {
	var in []download
	for _, d := range c.results() {
		if !d.at.Before(from) && !d.at.After(to) {
			in = append(in, d)
		}
	}
	return in
}

func (c *consumer) stop() {
	c.cancel()
	c.wg.Wait()
}

func failures(ds []download) int {
	n := 0
	for _, d := range ds {
		if d.result != "200" {
			n++
		}
	}
	return n
}

// summarize counts the results of ds, in order of first appearance.
func summarize(ds []download) string {
	var order []string
	count := map[string]int{}
	for _, d := range ds {
		if count[d.result] == 0 {
			order = append(order, d.result)
		}
		count[d.result]++
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%dx %s", count[r], r))
	}
	// When each failure started and how long it took: a timeout points to a stale endpoint.
	for _, d := range ds {
		if d.result != "200" {
			parts = append(parts, fmt.Sprintf("failed at %s after %v", d.at.Format("15:04:05.000"), d.took.Round(time.Millisecond)))
		}
	}
	return strings.Join(parts, ", ")
}

// describeEndpoints prints the source-controller Service's endpoints and the pods of
// sluice-system with their IPs and deletion times, to tell which pod a failed download reached.
func describeEndpoints(cluster *Cluster) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	slices, err := cluster.Node.Client.DiscoveryV1().EndpointSlices("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=source-controller"})
	if err != nil {
		return err.Error()
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			fmt.Fprintf(&b, "endpoint %v ready=%v serving=%v terminating=%v\n", e.Addresses, deref(e.Conditions.Ready), deref(e.Conditions.Serving), deref(e.Conditions.Terminating))
		}
	}
	pods, err := cluster.Node.Client.CoreV1().Pods("sluice-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=source-controller"})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s %s created %s deleted %v labels %v\n", p.Name, p.Status.PodIP, p.CreationTimestamp.Format("15:04:05"), p.DeletionTimestamp, p.Labels)
	}
	return b.String()
}

func deref(b *bool) bool { return b != nil && *b }
