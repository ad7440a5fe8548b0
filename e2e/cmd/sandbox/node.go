package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/e2e/node"
)

// nodeSandbox is Sluice as its users run it (`make cluster`): a control plane with a real node
// (e2e/node), deploy/default's controllers as pods of the images of `make images`, the demo's Git
// server reachable from the pods and the host, and the demo applied.
type nodeSandbox struct {
	Cluster *node.Cluster
	// GitURL is the demo repository's URL, on the pods' bridge address: the pods and the host
	// both reach it.
	GitURL string
	// ReceiverURL is the gating-controller's webhook receiver, at its Service's cluster IP,
	// which the host reaches through kube-proxy's rules.
	ReceiverURL string
	// ArtifactServiceIP is the source-controller Service's cluster IP, which the host reaches
	// (artifact URLs name the Service, which the host does not resolve).
	ArtifactServiceIP string
	// Objects are the demo's objects, as applied.
	Objects []*unstructured.Unstructured
	// PodsReady is how long the start took until every pod of deploy/default and CoreDNS was
	// Ready; Took until the demo's objects were Ready too.
	PodsReady, Took time.Duration

	tb        *harness.MainTB
	stopRelay func()
}

// systemNamespaces hold the pods that must be Ready: the controllers' and CoreDNS's. The demo's
// Deployments (podinfo) name images of a public registry, which the node does not pull.
var systemNamespaces = []string{"sluice-system", "kube-system"}

// startNodeSandbox starts the cluster with its state (kubeconfig, node, logs) in state, applies
// deploy/default of root with the images of bin/images and the demo of examples, and waits
// until every pod of systemNamespaces and every object of the demo is Ready. On error, what it
// started is stopped and the host's changes undone.
func startNodeSandbox(ctx context.Context, root, bin, state, examples string, log func(string, ...any)) (s *nodeSandbox, err error) {
	start := time.Now()
	var archives []string
	for _, c := range images.Controllers {
		archive := images.Archive(filepath.Join(bin, "images"), c)
		if _, err := os.Stat(archive); err != nil {
			return nil, fmt.Errorf("%s not found: run `make images`", archive)
		}
		archives = append(archives, archive)
	}
	renderDir := filepath.Join(state, "deploy")
	if err := os.MkdirAll(renderDir, 0o755); err != nil {
		return nil, err
	}
	rendered, err := node.RenderDeployDefault(root, bin, renderDir)
	if err != nil {
		return nil, err
	}
	gitLog, err := os.Create(filepath.Join(state, "git-server.log"))
	if err != nil {
		return nil, err
	}
	s = &nodeSandbox{tb: harness.NewMainTB(gitLog)}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
			s = nil
		}
	}()
	repo, err := serveRepository(s.tb, filepath.Join(examples, "repository"))
	if err != nil {
		return s, err
	}

	log("starting the control plane and the node...")
	s.Cluster, err = node.StartCluster(ctx, node.ClusterOptions{
		Options:      node.Options{BinDir: bin, StateDir: state, Images: archives, DNS: true, Log: log},
		InClusterAPI: true,
	})
	if err != nil {
		return s, err
	}
	u, err := url.Parse(repo.HTTPURL())
	if err != nil {
		return s, err
	}
	if u.Host, s.stopRelay, err = s.Cluster.RelayToPods(u.Host); err != nil {
		return s, fmt.Errorf("relaying the Git server to the pods: %w", err)
	}
	s.GitURL = u.String()

	log("applying deploy/default with the images %s/<controller>:%s...", images.Repository, images.Tag)
	if out, err := s.kubectl(ctx, bin, "apply", "--server-side", "--field-manager=sluice-cluster", "-f", rendered); err != nil {
		return s, fmt.Errorf("kubectl apply: %v\n%s", err, out)
	}
	if err := s.waitPodsReady(ctx, 5*time.Minute); err != nil {
		return s, err
	}
	s.PodsReady = time.Since(start)
	svc, err := s.Cluster.Node.Client.CoreV1().Services("sluice-system").Get(ctx, "gating-controller", metav1.GetOptions{})
	if err != nil {
		return s, err
	}
	s.ReceiverURL = "http://" + svc.Spec.ClusterIP
	if svc, err = s.Cluster.Node.Client.CoreV1().Services("sluice-system").Get(ctx, "source-controller", metav1.GetOptions{}); err != nil {
		return s, err
	}
	s.ArtifactServiceIP = svc.Spec.ClusterIP
	log("every pod Ready after %v", s.PodsReady.Round(time.Second))

	if s.Objects, err = demoObjects(examples, s.GitURL); err != nil {
		return s, err
	}
	if err := applyDemo(ctx, s.Cluster.Env.Client, s.Objects); err != nil {
		return s, err
	}
	log("demo applied from %s, waiting for it to be ready...", examples)
	if pending := waitReady(ctx, s.Cluster.Env.Client, s.Objects, 3*time.Minute); len(pending) > 0 {
		return s, fmt.Errorf("demo not ready (see kubectl -n sluice-system logs):\n  %s", strings.Join(pending, "\n  "))
	}
	s.Took = time.Since(start)
	return s, nil
}

// kubectl runs bin/kubectl as the cluster's administrator.
func (s *nodeSandbox) kubectl(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", s.Cluster.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitPodsReady waits until systemNamespaces have pods and all are Ready.
func (s *nodeSandbox) waitPodsReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pending []string
		for _, ns := range systemNamespaces {
			pods, err := s.Cluster.Node.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				pending = append(pending, err.Error())
				continue
			}
			if len(pods.Items) == 0 {
				pending = append(pending, ns+": no pods yet")
			}
			for _, p := range pods.Items {
				if !podReady(&p) {
					pending = append(pending, fmt.Sprintf("%s/%s: %s", ns, p.Name, p.Status.Phase))
				}
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pods not Ready (kubectl describe pods -A):\n  %s", strings.Join(pending, "\n  "))
		}
		time.Sleep(250 * time.Millisecond)
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

// Stop stops the relay, the node (undoing its changes to the host), the control plane and the
// Git server.
func (s *nodeSandbox) Stop() error {
	if s.stopRelay != nil {
		s.stopRelay()
	}
	var err error
	if s.Cluster != nil {
		err = s.Cluster.Stop()
	}
	s.tb.Close()
	return err
}

// writeStateFiles writes what the tour reads in the state directory: git-url, receiver-url, and
// .curlrc, which sends the source-controller Service's name (artifact URLs) to its cluster IP
// when CURL_HOME is the state directory.
func writeStateFiles(state string, s *nodeSandbox) error {
	host := "source-controller.sluice-system.svc.cluster.local"
	curlrc := fmt.Sprintf("# artifact URLs name the Service, which the host does not resolve\n"+
		"connect-to = %[1]s.:80:%[2]s:80\nconnect-to = %[1]s:80:%[2]s:80\n", host, s.ArtifactServiceIP)
	for name, content := range map[string]string{"git-url": s.GitURL + "\n", "receiver-url": s.ReceiverURL + "\n", ".curlrc": curlrc} {
		if err := os.WriteFile(filepath.Join(state, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runNode is `make cluster`: startNodeSandbox, the tour's addresses, then Ctrl-C.
func runNode(ctx context.Context, bin, state, examples string) (err error) {
	root := filepath.Dir(bin)
	if err := os.RemoveAll(state); err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(state)
	log := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	s, err := startNodeSandbox(ctx, root, bin, state, examples, log)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping, and undoing the node's changes to the host...")
		err = errors.Join(err, s.Stop())
	}()
	if err := writeStateFiles(state, s); err != nil {
		return err
	}
	fmt.Printf(`
Sluice is running on a real node: deploy/default's controllers as pods (namespace sluice-system),
with the demo in the namespace sluice-demo. Every pod was Ready after %[3]v, the demo after %[4]v.
The demo's podinfo Deployments name public images, which the node does not pull: their pods stay
in ErrImagePull, and their Deployments' specs are what the tour follows.

  kubeconfig:       %[1]s/kubeconfig
  demo repository:  %[2]s  (also in %[1]s/git-url; push to it, no credentials)
  gate receiver:    %[5]s/gates/<namespace>/<name>/open|close  (also in %[1]s/receiver-url)
  logs:             kubectl -n sluice-system logs deploy/<controller>; the node's parts in %[1]s/<part>.log

Try this, from another shell in the repository (the README's tour goes further):
  export KUBECONFIG=%[1]s/kubeconfig PATH=$PWD/bin:$PATH CURL_HOME=%[1]s
  kubectl get pods -A
  kubectl get gitrepositories,helmcharts,manifestgenerations,resourcesets,gates -A
  git clone %[2]s /tmp/demo    # edit, commit, git push: applied within ~10 s
Artifact URLs name the source-controller's Service, which only the pods resolve: with CURL_HOME,
curl reads %[1]s/.curlrc, which sends that name to the Service's address.

Press Ctrl-C to stop; it undoes the node's changes to the host.
`, state, s.GitURL, s.PodsReady.Round(time.Second), s.Took.Round(time.Second), s.ReceiverURL)
	<-ctx.Done()
	return nil
}
