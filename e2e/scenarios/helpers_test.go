package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// timeout bounds every wait of a scenario; each controller reacts in a second or two, the rest
// is headroom for a loaded machine.
const timeout = 45 * time.Second

// The kinds of the four controllers, as a user names them.
var (
	gitRepositoryGVK      = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	helmRepositoryGVK     = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"}
	helmChartGVK          = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"}
	ociRepositoryGVK      = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1beta2", Kind: "OCIRepository"}
	gateGVK               = schema.GroupVersionKind{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "Gate"}
	gateKeeperGVK         = schema.GroupVersionKind{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "GateKeeper"}
	resourceSetGVK        = schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "ResourceSet"}
	manifestGenerationGVK = schema.GroupVersionKind{Group: "generator.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "ManifestGeneration"}
	manifestUpdateGVK     = schema.GroupVersionKind{Group: "generator.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "ManifestUpdate"}
	deploymentGVK         = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMapGVK          = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// sluiceKinds are dumped when a scenario fails, and deleted when it ends.
var sluiceKinds = []schema.GroupVersionKind{
	resourceSetGVK, manifestUpdateGVK, manifestGenerationGVK, helmChartGVK, helmRepositoryGVK,
	ociRepositoryGVK, gitRepositoryGVK, gateKeeperGVK, gateGVK,
}

// scenario is one end-to-end story in namespaces of its own.
type scenario struct {
	t  testing.TB
	g  Gomega
	ns string
	// namespaces are every namespace of the scenario (ns first): their objects are dumped and
	// their log lines shown when the scenario fails.
	namespaces []string
}

// newScenario creates the namespace ns for a scenario. On failure the scenario's objects and
// the controllers' log lines about its namespaces are printed; at the end its objects are
// deleted (the controllers' finalizers run), so it stops loading the system.
func newScenario(t testing.TB, ns string) *scenario {
	t.Helper()
	s := &scenario{t: t, g: NewWithT(t), ns: ns}
	t.Cleanup(s.deleteObjects)
	t.Cleanup(func() {
		if t.Failed() {
			s.dump()
		}
	})
	s.namespace(ns)
	return s
}

// namespace creates another namespace of the scenario, with its applier account.
func (s *scenario) namespace(name string) string {
	s.t.Helper()
	s.namespaces = append(s.namespaces, name)
	err := k8s().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	s.g.Expect(err).NotTo(HaveOccurred())
	s.applier(name)
	return name
}

// applierAccount is the ServiceAccount that the ResourceSets and ManifestGenerations of a
// scenario name (spec.serviceAccountName). The system runs the resourceset-controller and the
// manifest-generator with --default-service-account=default, as deploy/ does: an object outside
// their own namespace that names no account applies as its namespace's "default" account, which
// may do nothing, so a scenario's objects name the account deploy/examples/accounts.yaml would
// give them.
const applierAccount = "applier"

// applier creates the applier account of namespace ns, which may do anything in ns and nothing
// elsewhere (a tenant's namespace admin); a scenario's clusterRole gives it more.
func (s *scenario) applier(ns string) {
	s.t.Helper()
	ctx := context.Background()
	all := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	s.g.Expect(k8s().Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: applierAccount}})).To(Succeed())
	s.g.Expect(k8s().Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: applierAccount}, Rules: all})).To(Succeed())
	s.g.Expect(k8s().Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: applierAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: applierAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: applierAccount, Namespace: ns}},
	})).To(Succeed())
}

// clusterRole creates a ClusterRole of the scenario, named "scenario-<ns>-<name>", with rules,
// and returns its name; bound (a ClusterRoleBinding) to the applier account of the scenario's
// namespace when bound. Like the scenario's namespaces, they stay until the system stops: the
// finalizers of the scenario's objects, which outlive it, still act as the account.
func (s *scenario) clusterRole(name string, bound bool, rules ...rbacv1.PolicyRule) string {
	s.t.Helper()
	ctx := context.Background()
	full := "scenario-" + s.ns + "-" + name
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: full}, Rules: rules}
	s.g.Expect(k8s().Create(ctx, role)).To(Succeed())
	if bound {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: full},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: full},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: applierAccount, Namespace: s.ns}},
		}
		s.g.Expect(k8s().Create(ctx, binding)).To(Succeed())
	}
	return full
}

// watchNamespace adds a namespace made by the system (a tenant's) to the ones reported on
// failure.
func (s *scenario) watchNamespace(name string) { s.namespaces = append(s.namespaces, name) }

func k8s() client.Client { return sys.Env.Client }

// dump prints the objects of the scenario's namespaces with their conditions, and the tail of
// each controller's log about them.
func (s *scenario) dump() {
	ctx := context.Background()
	var b strings.Builder
	for _, ns := range s.namespaces {
		for _, gvk := range sluiceKinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := k8s().List(ctx, list, client.InNamespace(ns)); err != nil {
				continue
			}
			for _, o := range list.Items {
				status, _ := json.Marshal(o.Object["status"])
				fmt.Fprintf(&b, "%s %s/%s (generation %d, annotations %v): %s\n", gvk.Kind, ns, o.GetName(), o.GetGeneration(), o.GetAnnotations(), status)
			}
		}
	}
	s.t.Logf("objects of %v:\n%s", s.namespaces, b.String())
	var filters []string
	for _, ns := range s.namespaces {
		filters = append(filters, `"namespace":"`+ns+`"`)
	}
	s.t.Log(sys.LogTails(60, append(filters, "harness: ")...))
	// The last lines whatever they are about: a panic or a fatal error names no namespace.
	s.t.Log(sys.LogTails(10))
}

// deleteObjects deletes the scenario's Sluice objects without waiting for their finalizers.
func (s *scenario) deleteObjects() {
	ctx := context.Background()
	for _, ns := range s.namespaces {
		for _, gvk := range sluiceKinds {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			_ = k8s().DeleteAllOf(ctx, obj, client.InNamespace(ns))
		}
	}
}

// yamlObject reads a manifest as a user writes it; replacements are applied first ("__NS__"
// and the like). A namespaced object without a namespace goes into the scenario's.
func (s *scenario) yamlObject(manifest string, replacements ...string) *unstructured.Unstructured {
	s.t.Helper()
	manifest = strings.NewReplacer(append([]string{"__NS__", s.ns}, replacements...)...).Replace(manifest)
	obj := &unstructured.Unstructured{}
	s.g.Expect(yaml.Unmarshal([]byte(manifest), &obj.Object)).To(Succeed(), manifest)
	if obj.GetNamespace() == "" && obj.GetKind() != "Namespace" {
		obj.SetNamespace(s.ns)
	}
	return obj
}

// create creates each document of the manifest.
func (s *scenario) create(manifest string, replacements ...string) []*unstructured.Unstructured {
	s.t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(manifest, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj := s.yamlObject(doc, replacements...)
		s.g.Expect(k8s().Create(context.Background(), obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
		objs = append(objs, obj)
	}
	return objs
}

// gitSecret creates the Secret with the Git server's credentials in ns.
func (s *scenario) gitSecret(ns, name string) {
	s.t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{"username": gitUser, "password": gitPassword},
	}
	s.g.Expect(k8s().Create(context.Background(), secret)).To(Succeed())
}

// newRepo creates a repository on the Git server with a first commit of files.
func (s *scenario) newRepo(name string, files map[string]string) (*testserver.Repo, string) {
	s.t.Helper()
	repo := servers.Git.NewRepo(s.t, name)
	return repo, repo.Commit(s.t, "Initial commit", files)
}

// object reads an object; nil when it does not exist.
func object(g Gomega, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return obj
}

// mustObject reads an object that must exist.
func mustObject(g Gomega, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	obj := object(g, gvk, ns, name)
	g.Expect(obj).NotTo(BeNil(), "%s %s/%s not found", gvk.Kind, ns, name)
	return obj
}

// exists reports whether the object exists.
func exists(gvk schema.GroupVersionKind, ns, name string) func(g Gomega) bool {
	return func(g Gomega) bool { return object(g, gvk, ns, name) != nil }
}

// condition returns "Status|Reason|Message" of the condition type of obj, "" without one.
func condition(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprintf("%v|%v|%v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}

// conditionOf reads the object and returns condition(obj, typ).
func conditionOf(gvk schema.GroupVersionKind, ns, name, typ string) func(g Gomega) string {
	return func(g Gomega) string { return condition(mustObject(g, gvk, ns, name), typ) }
}

// readyOf is conditionOf for Ready, once the controller has observed the latest generation:
// a Ready condition from a previous generation does not count.
func readyOf(gvk schema.GroupVersionKind, ns, name string) func(g Gomega) string {
	return func(g Gomega) string { return ready(mustObject(g, gvk, ns, name)) }
}

// ready is "Status|Reason|Message" of the Ready condition of obj for its current generation.
func ready(obj *unstructured.Unstructured) string {
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed != obj.GetGeneration() {
		return fmt.Sprintf("observedGeneration %d of generation %d", observed, obj.GetGeneration())
	}
	return condition(obj, "Ready")
}

// settled waits until the object's Ready condition (for its generation) matches readyMatcher
// and check passes on the same read, and returns that read: a Ready condition and the
// artifact, revision or inventory it speaks of are checked together.
func settled(g Gomega, gvk schema.GroupVersionKind, ns, name string, readyMatcher types.GomegaMatcher, check func(g Gomega, obj *unstructured.Unstructured)) *unstructured.Unstructured {
	var obj *unstructured.Unstructured
	g.Eventually(func(g Gomega) {
		o := mustObject(g, gvk, ns, name)
		g.Expect(ready(o)).To(readyMatcher, "%s %s/%s", gvk.Kind, ns, name)
		if check != nil {
			check(g, o)
		}
		obj = o
	}, timeout).WithOffset(1).Should(Succeed())
	return obj
}

// field checks a string field of a settled object.
func field(value string, fields ...string) func(g Gomega, obj *unstructured.Unstructured) {
	return func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(str(obj, fields...)).To(Equal(value), "%s", strings.Join(fields, "."))
	}
}

// artifactRevision checks the revision of a settled source's artifact.
func artifactRevision(revision string) func(g Gomega, obj *unstructured.Unstructured) {
	return field(revision, "status", "artifact", "revision")
}

// str reads a string field of an object.
func str(obj *unstructured.Unstructured, fields ...string) string {
	v, _, _ := unstructured.NestedString(obj.Object, fields...)
	return v
}

// strOf reads a string field of an object that must exist.
func strOf(gvk schema.GroupVersionKind, ns, name string, fields ...string) func(g Gomega) string {
	return func(g Gomega) string { return str(mustObject(g, gvk, ns, name), fields...) }
}

// revisionOf is the revision of the object's artifact.
func revisionOf(gvk schema.GroupVersionKind, ns, name string) func(g Gomega) string {
	return strOf(gvk, ns, name, "status", "artifact", "revision")
}

// inventory returns the ids of an inventory (ResourceSet, ManifestGeneration).
func inventory(obj *unstructured.Unstructured) []string {
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "inventory", "entries")
	var ids []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		ids = append(ids, fmt.Sprint(m["id"]))
	}
	return ids
}

// inventoryOf checks the inventory ids of a settled object, in any order.
func inventoryOf(ids []string) func(g Gomega, obj *unstructured.Unstructured) {
	return func(g Gomega, obj *unstructured.Unstructured) {
		g.Expect(inventory(obj)).To(ConsistOf(ids))
	}
}

// deployment is what a scenario checks of a Deployment: replicas and the image of each
// container.
type deployment struct {
	Replicas int64
	Images   map[string]string
}

func deploymentOf(ns, name string) func(g Gomega) deployment {
	return func(g Gomega) deployment {
		obj := mustObject(g, deploymentGVK, ns, name)
		replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		d := deployment{Replicas: replicas, Images: map[string]string{}}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m, _ := c.(map[string]any)
			d.Images[fmt.Sprint(m["name"])] = fmt.Sprint(m["image"])
		}
		return d
	}
}

// git runs the git CLI (for `git log` on a bare repository of the server) and returns its
// trimmed output.
func (s *scenario) git(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testserver.GitEnv()
	out, err := cmd.CombinedOutput()
	s.g.Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// kubectlGate runs the kubectl-gate plugin of bin/ against the system, as a user does.
func (s *scenario) kubectlGate(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "kubectl-gate"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sys.Kubeconfig)
	out, err := cmd.CombinedOutput()
	s.g.Expect(err).NotTo(HaveOccurred(), "kubectl gate %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// logContains reports whether the controller's log has a line holding every substring.
func logContains(controller string, substrings ...string) func() bool {
	return func() bool {
		data, err := os.ReadFile(sys.Controller(controller).LogPath)
		if err != nil {
			return false
		}
	lines:
		for _, l := range strings.Split(string(data), "\n") {
			for _, sub := range substrings {
				if !strings.Contains(l, sub) {
					continue lines
				}
			}
			return true
		}
		return false
	}
}

// fetched is an artifact downloaded by URL.
type fetched struct {
	Status int
	Digest string
	ETag   string
	Size   int
	Body   []byte
}

// httpGet downloads url from the test process.
func httpGet(g Gomega, url string) fetched {
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(body)
	return fetched{Status: resp.StatusCode, Digest: "sha256:" + hex.EncodeToString(sum[:]), ETag: resp.Header.Get("ETag"), Size: len(body), Body: body}
}

// setInputs replaces the inputs of a ResourceSet, as a user edits it.
func setInputs(g Gomega, rset *unstructured.Unstructured, inputs []any) {
	g.Eventually(func(g Gomega) {
		obj := mustObject(g, resourceSetGVK, rset.GetNamespace(), rset.GetName())
		g.Expect(unstructured.SetNestedSlice(obj.Object, inputs, "spec", "inputs")).To(Succeed())
		g.Expect(k8s().Update(context.Background(), obj)).To(Succeed())
	}, timeout).Should(Succeed())
}
