package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// ownGroups are the API groups whose kinds each controller owns.
var ownGroups = map[string]string{
	"source-controller":      "source.toolkit.fluxcd.io",
	"gating-controller":      "gating.toolkit.fluxcd.io",
	"resourceset-controller": "fluxcd.controlplane.io",
	"manifest-generator":     "generator.toolkit.fluxcd.io",
}

// binding is what a ClusterRoleBinding and a RoleBinding have in common.
type binding struct {
	Kind, Namespace, Name string
	Subjects              []rbacv1.Subject
	RoleRef               rbacv1.RoleRef
}

// bindingsIn returns the ClusterRoleBindings and RoleBindings of objects.
func bindingsIn(t *testing.T, objects []*unstructured.Unstructured) []binding {
	t.Helper()
	var out []binding
	for _, o := range objects {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding // a RoleBinding has the same fields
		NewWithT(t).Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b)).To(Succeed())
		out = append(out, binding{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), Subjects: b.Subjects, RoleRef: b.RoleRef})
	}
	return out
}

// bindsAccount reports whether b grants its role to the ServiceAccount namespace/name.
func (b binding) bindsAccount(namespace, name string) bool {
	return slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == name
	})
}

// rbacObjectsOf returns what deploy/default gives the controller name: its ServiceAccount, the
// bindings naming it and the roles they refer to.
func rbacObjectsOf(t *testing.T, objects []*unstructured.Unstructured, name string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	roles := map[string]bool{}
	bindings := map[string]bool{}
	for _, b := range bindingsIn(t, objects) {
		if b.bindsAccount(deployNamespace, name) {
			bindings[b.Kind+"/"+b.Name] = true
			ns := ""
			if b.RoleRef.Kind == "Role" {
				ns = b.Namespace
			}
			roles[b.RoleRef.Kind+"/"+ns+"/"+b.RoleRef.Name] = true
		}
	}
	for _, o := range objects {
		switch o.GetKind() {
		case "ServiceAccount":
			if o.GetNamespace() == deployNamespace && o.GetName() == name {
				out = append(out, o)
			}
		case "ClusterRoleBinding", "RoleBinding":
			if bindings[o.GetKind()+"/"+o.GetName()] {
				out = append(out, o)
			}
		case "ClusterRole", "Role":
			if roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] {
				out = append(out, o)
			}
		}
	}
	return out
}

// rulesOf returns the rules of the roles among objects.
func rulesOf(t *testing.T, objects []*unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	var rules []rbacv1.PolicyRule
	for _, o := range objects {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			var r rbacv1.ClusterRole
			NewWithT(t).Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r)).To(Succeed())
			rules = append(rules, r.Rules...)
		}
	}
	return rules
}

// Each controller runs as its own ServiceAccount, bound to its own ClusterRole and to nothing
// else; no binding of deploy/default grants anything to another subject. The source-controller
// also has a Role of its own in sluice-system, bound by a RoleBinding there: the pods of its
// namespace, the leader's of which it labels (--leader-pod-label).
func TestRBACEachControllerHasItsOwnAccount(t *testing.T) {
	g := NewWithT(t)
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	bindings := bindingsIn(t, objects)
	roles := map[string]bool{}
	for _, o := range objects {
		switch o.GetKind() {
		case "ClusterRole":
			roles["ClusterRole/"+o.GetName()] = true
		case "Role":
			roles["Role/"+o.GetNamespace()+"/"+o.GetName()] = true
		}
	}
	for _, b := range bindings {
		g.Expect(b.Subjects).To(HaveLen(1), b.Name)
		s := b.Subjects[0]
		g.Expect(s.Kind).To(Equal(rbacv1.ServiceAccountKind), b.Name)
		g.Expect(s.Namespace).To(Equal(deployNamespace), b.Name)
		g.Expect(harness.Controllers).To(ContainElement(s.Name), b.Name)
		g.Expect(b.RoleRef.Name).To(Equal(s.Name), "%s binds %s to another controller's role or to a role deploy/ does not define", b.Name, s.Name)
		if b.Kind == "RoleBinding" {
			g.Expect(b.Namespace).To(Equal(deployNamespace), b.Name)
			g.Expect(b.RoleRef.Kind).To(Equal("Role"), "%s: a RoleBinding of a ClusterRole", b.Name)
			g.Expect(roles).To(HaveKey("Role/"+b.Namespace+"/"+b.RoleRef.Name), b.Name)
			continue
		}
		g.Expect(b.RoleRef.Kind).To(Equal("ClusterRole"), b.Name)
		g.Expect(roles).To(HaveKey("ClusterRole/"+b.RoleRef.Name), b.Name)
	}
	for _, name := range harness.Controllers {
		own := rbacObjectsOf(t, objects, name)
		var kinds []string
		for _, o := range own {
			kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		}
		want := []string{"ServiceAccount/" + name, "ClusterRole/" + name, "ClusterRoleBinding/" + name}
		if name == "source-controller" {
			want = append(want, "Role/"+name, "RoleBinding/"+name)
		}
		g.Expect(kinds).To(ConsistOf(want), name)
	}
}

// outsideWrites lists, as "verb group/resource", what rules let a controller change outside its
// own API group: the writes (create, update, patch, delete, deletecollection, *) and the
// privilege verbs (impersonate, escalate, bind). Reads (get, list, watch; Secrets included) are
// never listed, nor the writes every controller needs: events (create, patch) and its
// leader-election leases. A rule on non-resource URLs is listed as it is.
func outsideWrites(rules []rbacv1.PolicyRule, ownGroup string) []string {
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "impersonate", "escalate", "bind", "*"}
	var out []string
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			out = append(out, fmt.Sprintf("%v %v", r.Verbs, r.NonResourceURLs))
		}
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, verb := range r.Verbs {
					switch {
					case !slices.Contains(writes, verb), group == ownGroup:
					case group == "" && resource == "events" && (verb == "create" || verb == "patch"):
					case group == "coordination.k8s.io" && resource == "leases":
					default:
						if group == "" {
							group = "core"
						}
						out = append(out, verb+" "+group+"/"+resource)
					}
				}
			}
		}
	}
	return out
}

// No controller may write objects it does not own. The source-controller and gating-controller
// need nothing outside their own group but events and leases (and read Secrets and Gates), but
// that the source-controller labels its own pod and creates the Secret of its URL keys
// (--artifact-url-keys-secret-ref), in its namespace only. The
// resourceset-controller and manifest-generator apply arbitrary objects, like Flux's
// kustomize-controller: their ClusterRole grants everything, and they impersonate the
// spec.serviceAccountName of each object (the API's documented exception), so that an object
// naming an account is applied with that account's permissions only; the manifest-generator
// also patches GitRepositories, to request a fetch after it pushes, and creates, execs in and
// deletes the session pods of the tenants' .flux.yaml commands (manifestgeneration.md,
// Sessions). Any other rule fails here.
func TestRBACControllerRolesWriteOnlyTheirOwnKinds(t *testing.T) {
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	controller := func(name string) []rbacv1.PolicyRule { return rulesOf(t, rbacObjectsOf(t, objects, name)) }
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	for _, tc := range []struct {
		name     string
		rules    []rbacv1.PolicyRule
		ownGroup string
		want     []string
	}{
		// The label of the leader's pod, in sluice-system only (TestRBACSourceControllerPatchesPodsOfItsNamespaceOnly).
		{"source-controller", controller("source-controller"), ownGroups["source-controller"], []string{"patch core/pods", "create core/secrets"}},
		// Flux's syncs held behind gates: spec.suspend, the held annotations and the Approved
		// condition (gating-controller/docs/flux-syncs.md).
		// Flux's Receivers, which it serves too (their status), and the reconcile requests
		// (reconcile.fluxcd.io/requestedAt) a Receiver writes on the kinds it may name
		// (gating-controller/docs/flux-receiver.md). It impersonates a gate's
		// spec.serviceAccountName to read the objects of its promotion and checks
		// (gating-controller/docs/gate.md, "Whose permissions").
		{"gating-controller", controller("gating-controller"), ownGroups["gating-controller"], []string{
			"impersonate core/serviceaccounts",
			"patch kustomize.toolkit.fluxcd.io/kustomizations", "patch kustomize.toolkit.fluxcd.io/kustomizations/status",
			"patch helm.toolkit.fluxcd.io/helmreleases", "patch helm.toolkit.fluxcd.io/helmreleases/status",
			"patch image.toolkit.fluxcd.io/imageupdateautomations", "patch image.toolkit.fluxcd.io/imageupdateautomations/status",
			"patch notification.toolkit.fluxcd.io/receivers/status",
			"patch fluxcd.controlplane.io/resourcesetinputproviders", "patch fluxcd.controlplane.io/resourcesets",
			"patch generator.toolkit.fluxcd.io/manifestgenerations",
			"patch image.toolkit.fluxcd.io/imagepolicies", "patch image.toolkit.fluxcd.io/imagerepositories",
			"patch source.extensions.fluxcd.io/artifactgenerators",
			"patch source.toolkit.fluxcd.io/buckets", "patch source.toolkit.fluxcd.io/externalartifacts",
			"patch source.toolkit.fluxcd.io/gitrepositories", "patch source.toolkit.fluxcd.io/helmcharts",
			"patch source.toolkit.fluxcd.io/helmrepositories", "patch source.toolkit.fluxcd.io/ocirepositories",
		}},
		{"resourceset-controller", controller("resourceset-controller"), ownGroups["resourceset-controller"],
			[]string{"* */*", "impersonate core/serviceaccounts"}},
		{"manifest-generator", controller("manifest-generator"), ownGroups["manifest-generator"],
			[]string{"* */*", "impersonate core/serviceaccounts", "patch source.toolkit.fluxcd.io/gitrepositories",
				"create core/pods", "delete core/pods", "create core/pods/exec"}},

		// The check itself.
		{"reads are fine", []rbacv1.PolicyRule{rule("", "secrets", "get", "list", "watch"), rule("*", "*", "get")}, "a", nil},
		{"events and leases are fine", []rbacv1.PolicyRule{rule("", "events", "create", "patch"), rule("coordination.k8s.io", "leases", "*")}, "a", nil},
		{"own kinds are fine", []rbacv1.PolicyRule{rule("a", "*", "*")}, "a", nil},
		{"writing secrets", []rbacv1.PolicyRule{rule("", "secrets", "get", "update")}, "a", []string{"update core/secrets"}},
		{"deleting events", []rbacv1.PolicyRule{rule("", "events", "delete")}, "a", []string{"delete core/events"}},
		{"another group", []rbacv1.PolicyRule{rule("apps", "deployments", "patch"), rule("b", "things", "create")}, "a",
			[]string{"patch apps/deployments", "create b/things"}},
		{"a wildcard", []rbacv1.PolicyRule{rule("*", "configmaps", "*")}, "a", []string{"* */configmaps"}},
		{"binding roles", []rbacv1.PolicyRule{rule("rbac.authorization.k8s.io", "clusterroles", "bind", "escalate")}, "a",
			[]string{"bind rbac.authorization.k8s.io/clusterroles", "escalate rbac.authorization.k8s.io/clusterroles"}},
		{"non-resource URLs", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, "a", []string{"[get] [/metrics]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.rules).NotTo(BeEmpty())
			got := outsideWrites(tc.rules, tc.ownGroup)
			if tc.want == nil {
				g.Expect(got).To(BeEmpty())
			} else {
				g.Expect(got).To(ConsistOf(tc.want))
			}
		})
	}
}

// The source-controller reads and patches pods (the label of the leader's, --leader-pod-label)
// through a Role of sluice-system only: its ClusterRole has no rule on pods.
func TestRBACSourceControllerPatchesPodsOfItsNamespaceOnly(t *testing.T) {
	g := NewWithT(t)
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	var roles []string
	for _, o := range rbacObjectsOf(t, objects, "source-controller") {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		roles = append(roles, o.GetKind())
		var pods []string
		for _, r := range rulesOf(t, []*unstructured.Unstructured{o}) {
			if slices.Contains(r.APIGroups, "") && (slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "*")) {
				pods = append(pods, r.Verbs...)
			}
		}
		var secrets []string
		for _, r := range rulesOf(t, []*unstructured.Unstructured{o}) {
			if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "secrets") {
				secrets = append(secrets, r.Verbs...)
			}
		}
		if o.GetKind() == "ClusterRole" {
			g.Expect(pods).To(BeEmpty(), "the ClusterRole grants pods everywhere")
			g.Expect(secrets).NotTo(ContainElement("create"), "the ClusterRole creates Secrets everywhere")
		} else {
			g.Expect(o.GetNamespace()).To(Equal(deployNamespace))
			g.Expect(pods).To(ConsistOf("get", "patch"))
		}
	}
	g.Expect(roles).To(ConsistOf("ClusterRole", "Role"))
}

// serviceAccountKubeconfig writes a kubeconfig of the control plane that authenticates as the
// ServiceAccount sluice-system/name with a token from the TokenRequest API, and checks that the
// API server sees that identity.
func serviceAccountKubeconfig(t *testing.T, dir, name string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	expiry := int64(3600)
	token, err := admin.CoreV1().ServiceAccounts(deployNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := clientcmd.LoadFromFile(kubeconfigIn(t, dir))
	g.Expect(err).NotTo(HaveOccurred())
	for k := range cfg.AuthInfos {
		cfg.AuthInfos[k] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	}
	path := filepath.Join(dir, name+".kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())

	rest, err := clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(HaveOccurred())
	as, err := kubernetes.NewForConfig(rest)
	g.Expect(err).NotTo(HaveOccurred())
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + deployNamespace + ":" + name))
	return path
}

// deploymentArgs are the flags of the controller's Deployment in objects, without those the
// harness sets to loopback addresses and test directories.
func deploymentArgs(t *testing.T, objects []*unstructured.Unstructured, name string) []string {
	t.Helper()
	harnessFlags := regexp.MustCompile(`^--(metrics-addr|health-addr|receiver-addr|webhook-receiver-addr|storage-path|storage-addr|storage-adv-addr|generator-path)=`)
	for _, o := range objects {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		var out []string
		for _, a := range args {
			if !harnessFlags.MatchString(a) {
				out = append(out, a)
			}
		}
		return out
	}
	t.Fatalf("no Deployment %s in deploy/default", name)
	return nil
}

// startAs applies the controller's ServiceAccount, ClusterRole and binding from deploy/default and
// runs the controller binary as that account, with its Deployment's flags (but the addresses,
// which the harness picks on loopback) and extraArgs.
func startAs(t *testing.T, objects []*unstructured.Unstructured, name string, extraArgs ...string) *harness.Controller {
	t.Helper()
	applyObjects(t, rbacObjectsOf(t, objects, name))
	dir := t.TempDir()
	c := startController(t, name, serviceAccountKubeconfig(t, dir, name), dir, append(deploymentArgs(t, objects, name), extraArgs...)...)
	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(c.LogPath)
			t.Logf("%s log:\n%s", name, raw)
		}
	})
	return c
}

// forbiddenLines stops the controller and returns the lines of its log that report a refusal of
// the API server.
func forbiddenLines(t *testing.T, c *harness.Controller) []string {
	t.Helper()
	g := NewWithT(t)
	_ = c.Stop(30 * time.Second) // the log is complete once the process is gone
	raw, err := os.ReadFile(c.LogPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raw).NotTo(BeEmpty())
	return refusals(raw)
}

// refusals are the lines of a log that report a refusal of the API server ("... is forbidden:
// User ... cannot ...").
func refusals(log []byte) []string {
	return regexp.MustCompile(`(?im)^.*forbidden.*$`).FindAllString(string(log), -1)
}

// readyOf is "status|reason|message" of the Ready condition of obj, read from the API server.
func readyOf(g Gomega, obj *unstructured.Unstructured) string {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return fmt.Sprintf("%v|%v|%v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}

// artifactRevision polls status.artifact.revision of a source.
func artifactRevision(obj *unstructured.Unstructured) func(g Gomega) string {
	return func(g Gomega) string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		rev, _, _ := unstructured.NestedString(obj.Object, "status", "artifact", "revision")
		return rev
	}
}

func newObject(apiVersion, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     spec,
	}}
}

// Each controller, started with a kubeconfig of its own ServiceAccount bound to nothing but its
// ClusterRole from deploy/, reconciles an object to Ready (leader election on, as deployed) and
// never meets a refusal of the API server. The resourceset-controller and manifest-generator
// apply as a tenant account allowed ConfigMaps in its namespace only (impersonation).
func TestRBACControllersWorkWithOnlyTheirClusterRole(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	for _, ns := range []string{deployNamespace, "rbac-e2e"} {
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}
	const ns = "rbac-e2e"

	// The tenant account objects are applied as.
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "tenant"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
	})).To(Succeed())

	// A Git repository behind basic auth: the source-controller reads the credentials Secret.
	server := testserver.NewGitServer(t, testserver.Options{Username: "git", Password: "s3cret"})
	repo := server.NewRepo(t, "rbac")
	sha := repo.Commit(t, "Initial commit", map[string]string{"deploy/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: from-git
  namespace: rbac-e2e
data:
  source: git
`})
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"},
		StringData: map[string]string{"username": "git", "password": "s3cret"},
	})).To(Succeed())
	gitRepository := func(name string) *unstructured.Unstructured {
		return newObject("source.toolkit.fluxcd.io/v1", "GitRepository", ns, name, map[string]any{
			"url": repo.HTTPURL(), "interval": "1h", "secretRef": map[string]any{"name": "git-auth"},
		})
	}

	// The pod the source-controller runs in, as the Deployment names it (POD_NAME from the
	// downward API): it labels it once elected (--leader-pod-label) and unlabels it at stop. No
	// node runs it; the API server keeps it Pending.
	sourcePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, Name: "source-controller-rbac-e2e",
			Labels: map[string]string{"app.kubernetes.io/name": "source-controller"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "source-controller"}}},
	}
	g.Expect(env.Client.Create(ctx, sourcePod)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sourcePod) })
	t.Setenv("POD_NAME", sourcePod.Name)
	leaderLabel := func(g Gomega) string {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sourcePod), pod)).To(Succeed())
		return pod.Labels[artifactServerLabel]
	}

	t.Run("gating-controller", func(t *testing.T) {
		g := NewWithT(t)
		c := startAs(t, objects, "gating-controller")
		gate := newObject("gating.toolkit.fluxcd.io/v1alpha1", "Gate", ns, "approval", map[string]any{"default": "closed", "window": "1h"})
		g.Expect(env.Client.Create(ctx, gate)).To(Succeed())
		g.Eventually(func(g Gomega) string { return readyOf(g, gate) }, time.Minute).Should(HavePrefix("True|"))
		g.Expect(forbiddenLines(t, c)).To(BeEmpty())
	})

	t.Run("source-controller", func(t *testing.T) {
		g := NewWithT(t)
		c := startAs(t, objects, "source-controller")
		obj := gitRepository("source")
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
		g.Eventually(func(g Gomega) string { return readyOf(g, obj) }, time.Minute).Should(HavePrefix("True|"))
		g.Eventually(artifactRevision(obj), time.Minute).Should(Equal("master@sha1:" + sha))
		g.Eventually(leaderLabel, time.Minute).Should(Equal("leader"))
		g.Expect(forbiddenLines(t, c)).To(BeEmpty())
		g.Expect(leaderLabel(g)).To(BeEmpty(), "the label goes at stop")
	})

	t.Run("resourceset-controller", func(t *testing.T) {
		g := NewWithT(t)
		c := startAs(t, objects, "resourceset-controller")
		rset := newObject("fluxcd.controlplane.io/v1", "ResourceSet", ns, "tenants", map[string]any{
			"serviceAccountName": "tenant",
			"inputs":             []any{map[string]any{"tenant": "team1"}},
			"resources": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "from-rset-<< inputs.tenant >>", "namespace": ns},
				"data":     map[string]any{"tenant": "<< inputs.tenant >>"},
			}},
		})
		g.Expect(env.Client.Create(ctx, rset)).To(Succeed())
		g.Eventually(func(g Gomega) string { return readyOf(g, rset) }, time.Minute).Should(HavePrefix("True|"))
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-rset-team1"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("tenant", "team1"))
		g.Expect(forbiddenLines(t, c)).To(BeEmpty())
	})

	// Deployed as deploy/default sets it (--default-service-account=default), a ResourceSet that
	// names no account, in a tenant's namespace, has the rights of that namespace's "default"
	// account: none. It cannot bind itself cluster-admin, nor write into another namespace.
	t.Run("resourceset-controller lockdown", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(deploymentArgs(t, objects, "resourceset-controller")).To(ContainElement("--default-service-account=default"))
		g.Expect(deploymentArgs(t, objects, "manifest-generator")).To(ContainElement("--default-service-account=default"))
		startAs(t, objects, "resourceset-controller")
		tenant := "rbac-e2e-tenant"
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}))).To(Succeed())
		// No service account controller runs here to create it, as one would in a cluster.
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "default"}}))).To(Succeed())
		escalate := newObject("fluxcd.controlplane.io/v1", "ResourceSet", tenant, "escalate", map[string]any{
			"resources": []any{map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
				"metadata": map[string]any{"name": "rbac-e2e-tenant-admin"},
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": tenant}},
			}},
		})
		trespass := newObject("fluxcd.controlplane.io/v1", "ResourceSet", tenant, "trespass", map[string]any{
			"resources": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "from-another-tenant", "namespace": ns},
			}},
		})
		for _, rset := range []*unstructured.Unstructured{escalate, trespass} {
			g.Expect(env.Client.Create(ctx, rset)).To(Succeed())
			g.Eventually(func(g Gomega) string { return readyOf(g, rset) }, time.Minute).Should(And(
				HavePrefix("False|ReconciliationFailed|"), ContainSubstring(`User "system:serviceaccount:`+tenant+`:default" cannot`)))
		}
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: "rbac-e2e-tenant-admin"}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-another-tenant"}, &corev1.ConfigMap{}))).To(BeTrue())
	})

	t.Run("manifest-generator", func(t *testing.T) {
		g := NewWithT(t)
		source := startAs(t, objects, "source-controller")
		c := startAs(t, objects, "manifest-generator")
		repository := gitRepository("generated")
		g.Expect(env.Client.Create(ctx, repository)).To(Succeed())
		g.Eventually(artifactRevision(repository), time.Minute).Should(Equal("master@sha1:" + sha))
		mg := newObject("generator.toolkit.fluxcd.io/v1alpha1", "ManifestGeneration", ns, "app", map[string]any{
			"sourceRef":          map[string]any{"kind": "GitRepository", "name": "generated"},
			"path":               "./deploy",
			"interval":           "1h",
			"prune":              true,
			"serviceAccountName": "tenant",
		})
		g.Expect(env.Client.Create(ctx, mg)).To(Succeed())
		g.Eventually(func(g Gomega) string { return readyOf(g, mg) }, time.Minute).Should(HavePrefix("True|"))
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-git"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("source", "git"))
		g.Expect(forbiddenLines(t, c)).To(BeEmpty())
		g.Expect(forbiddenLines(t, source)).To(BeEmpty())
	})

	// The check above can fail: the gating-controller run as the source-controller's account
	// (which may read Gates but not list GateKeepers nor write Gates) is refused, and says so.
	t.Run("a missing permission shows in the log", func(t *testing.T) {
		g := NewWithT(t)
		applyObjects(t, rbacObjectsOf(t, objects, "source-controller"))
		dir := t.TempDir()
		c, err := harness.StartController(binDir, "gating-controller", serviceAccountKubeconfig(t, dir, "source-controller"), dir)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Stop(30 * time.Second) })
		g.Eventually(func() ([]byte, error) { return os.ReadFile(c.LogPath) }, time.Minute).Should(MatchRegexp(`(?i)gatekeepers.*forbidden`))
		_ = c.Stop(5 * time.Second) // it may wait for its caches and not stop on SIGTERM
		raw, err := os.ReadFile(c.LogPath)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusals(raw)).To(ContainElement(ContainSubstring("gatekeepers")))
	})
}
