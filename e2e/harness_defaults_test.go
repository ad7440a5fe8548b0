package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The harness gives each controller the flags of its Deployment in deploy/ that decide what
// objects may do, so that the tests and `make dev` run with the defaults of a cluster.
func TestHarnessGivesTheControllersTheFlagsOfDeploy(t *testing.T) {
	g := NewWithT(t)
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	for _, name := range harness.Controllers {
		deployed := deploymentArgs(t, objects, name)
		g.Expect(deployed).To(ContainElements(harness.DefaultArgs[name]), name)
		for _, flag := range []string{"--default-service-account", "--service-cidr"} {
			if v, ok := flagValue(deployed, flag); ok {
				g.Expect(harness.DefaultArgs[name]).To(ContainElement(flag+"="+v), name)
			}
		}
	}
	// The Service range deploy/ sets is the one of the tests' API server.
	g.Expect(harness.DefaultArgs).To(HaveKeyWithValue("resourceset-controller", ContainElement("--service-cidr="+testenv.ServiceCIDR)))
	g.Expect(harness.DefaultArgs).To(HaveKeyWithValue("resourceset-controller", ContainElement("--default-service-account=default")))
	g.Expect(harness.DefaultArgs).To(HaveKeyWithValue("manifest-generator", ContainElement("--default-service-account=default")))
}

// A resourceset-controller started by the harness, with nothing but the harness's flags, applies
// a ResourceSet that names no account as its namespace's "default" ServiceAccount, which may do
// nothing; in the controller's own namespace it applies with the controller's rights. And the
// API server of the tests refuses a Gate request made in someone else's name, as deploy/default's
// admission policy makes it.
func TestHarnessRunsTheSecureDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	startController(t, "resourceset-controller", kubeconfigIn(t, dir), dir)

	const tenant = "harness-defaults"
	for _, ns := range []string{tenant, deployNamespace} {
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}
	// No service account controller runs here to create it, as one would in a cluster.
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "default"}})).To(Succeed())
	configMapSet := func(ns, name string) map[string]any {
		return map[string]any{"resources": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns},
		}}}
	}
	locked := newObject("fluxcd.controlplane.io/v1", "ResourceSet", tenant, "no-account", configMapSet(tenant, "from-tenant"))
	g.Expect(env.Client.Create(ctx, locked)).To(Succeed())
	g.Eventually(func(g Gomega) string { return readyOf(g, locked) }, time.Minute).Should(And(
		HavePrefix("False|ReconciliationFailed|"), ContainSubstring(`User "system:serviceaccount:`+tenant+`:default" cannot`)))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "from-tenant"}, &corev1.ConfigMap{}))).To(BeTrue())

	system := newObject("fluxcd.controlplane.io/v1", "ResourceSet", deployNamespace, "harness-defaults", configMapSet(deployNamespace, "harness-defaults"))
	g.Expect(env.Client.Create(ctx, system)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), system) })
	g.Eventually(func(g Gomega) string { return readyOf(g, system) }, time.Minute).Should(HavePrefix("True|"))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "harness-defaults"}, &corev1.ConfigMap{})).To(Succeed())

	gate := newObject("gating.toolkit.fluxcd.io/v1alpha1", "Gate", tenant, "forged", map[string]any{"default": "closed"})
	gate.SetAnnotations(map[string]string{
		"open.gate.fluxcd.io/requestedAt": time.Now().UTC().Format(time.RFC3339), "open.gate.fluxcd.io/requestedBy": "someone-else"})
	// A dry run, tried until the API server has loaded the policy.
	g.Eventually(func() error { return env.Client.Create(ctx, gate.DeepCopy(), client.DryRunAll) }, 30*time.Second, 200*time.Millisecond).Should(
		And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring("ValidatingAdmissionPolicy 'gate-requested-by'"))))
}
