//go:build node

package node

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/e2e/images"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// kustomizeControllerObjects deploy Flux's kustomize-controller as Flux does (its namespace,
// account with cluster-admin, and a Deployment with the restricted security context), from the
// image e2e/images makes of bin/kustomize-controller. flux-system is labelled to download
// artifacts (deploy/README.md, network policies).
const kustomizeControllerObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: flux-system
  labels: {source.toolkit.fluxcd.io/artifacts: allow}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kustomize-controller, namespace: flux-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: flux-kustomize-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: kustomize-controller, namespace: flux-system}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kustomize-controller, namespace: flux-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: kustomize-controller}}
  template:
    metadata: {labels: {app: kustomize-controller}}
    spec:
      serviceAccountName: kustomize-controller
      securityContext: {runAsNonRoot: true, fsGroup: 1337, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: manager
          image: %s
          imagePullPolicy: IfNotPresent
          args: [--watch-all-namespaces=true, --log-level=info, --log-encoding=json, --enable-leader-election, --metrics-addr=:8080, --health-addr=:9440]
          env:
            - name: RUNTIME_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
          readinessProbe: {httpGet: {path: /readyz, port: 9440}, periodSeconds: 2}
          securityContext:
            runAsUser: 65532
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts: [{name: tmp, mountPath: /tmp}]
      volumes: [{name: tmp, emptyDir: {}}]
`

// fluxKustomizeController: Flux's kustomize-controller, running as a pod beside
// deploy/default, reconciles a Kustomization from a Sluice GitRepository: it downloads the
// artifact by its URL, the source-controller's Service by its DNS name, and applies what it
// holds. A pod of a namespace that network policies do not allow to download artifacts fetches
// the artifact too: this cluster's CNI (bridge) does not enforce NetworkPolicies
// (deploy/README.md), so what protects artifacts here is their signed URLs.
func fluxKustomizeController(ctx context.Context, t *testing.T, cluster *Cluster) {
	srv := testserver.NewGitServer(t, testserver.Options{})
	repo := srv.NewRepo(t, "fleet")
	repo.Commit(t, "app", map[string]string{
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-flux\n  namespace: flux-system\ndata:\n  greeting: hello\n",
	})
	gitURL := relayGitServer(t, cluster, srv)
	kubectl(ctx, t, cluster, "apply", "--server-side", "-f", filepath.Join(cluster.Node.opts.BinDir, "crds"))
	applyObjects(ctx, t, cluster, fmt.Sprintf(kustomizeControllerObjects, images.Ref("kustomize-controller")))
	waitDeploymentsReady(ctx, t, cluster, "flux-system", []string{"kustomize-controller"})
	start := time.Now()
	applyObjects(ctx, t, cluster, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec:
  interval: 1m
  url: %s
  ref: {branch: %s}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  interval: 1m
  sourceRef: {kind: GitRepository, name: fleet}
  path: ./app
  prune: true
`, gitURL(repo), repo.CurrentBranch(t)))
	waitReady(ctx, t, cluster, "flux-system", "gitrepository/fleet")
	waitReady(ctx, t, cluster, "flux-system", "kustomization/app")
	t.Logf("the Kustomization applied the GitRepository's artifact %v after both were created", time.Since(start).Round(time.Millisecond))
	revision := kubectl(ctx, t, cluster, "-n", "flux-system", "get", "gitrepository/fleet", "-o", "jsonpath={.status.artifact.revision}")
	// Ready was once read here with lastAppliedRevision still empty (a CI run): the revision is
	// waited for, a little, rather than read once.
	var applied string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		applied = kubectl(ctx, t, cluster, "-n", "flux-system", "get", "kustomization/app", "-o", "jsonpath={.status.lastAppliedRevision}")
		if applied == revision || time.Now().After(deadline) {
			break
		}
	}
	if applied != revision {
		t.Errorf("the Kustomization applied revision %q, the GitRepository's artifact is %q", applied, revision)
	}
	cm, err := cluster.Node.Client.CoreV1().ConfigMaps("flux-system").Get(ctx, "from-flux", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ConfigMap of the Kustomization: %v", err)
	}
	if cm.Data["greeting"] != "hello" {
		t.Errorf("the ConfigMap of the Kustomization holds %v", cm.Data)
	}

	// The namespace "default" is not labelled to download artifacts, and yet.
	url := kubectl(ctx, t, cluster, "-n", "flux-system", "get", "gitrepository/fleet", "-o", "jsonpath={.status.artifact.url}")
	if !strings.HasPrefix(url, "http://source-controller.sluice-system.svc.cluster.local./") {
		t.Fatalf("the artifact URL %q does not name the Service", url)
	}
	logs := runPod(ctx, t, cluster, "outside", "wget -qO- "+url+" | tar -tzf -")
	if !strings.Contains(logs, "configmap.yaml") {
		t.Errorf("the pod in default did not download the artifact:\n%s", logs)
	}
	t.Logf("this cluster does not enforce NetworkPolicies (CNI bridge): a pod of the namespace default downloaded %s", url)
	noRestarts(ctx, t, cluster, "flux-system")
}
