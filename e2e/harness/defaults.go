package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The harness runs the system with the secure defaults of deploy/, so that what the tests and
// `make dev` show is what a cluster deployed from deploy/default does.

// DefaultArgs are the flags deploy/ gives a controller beyond the common ones, that change what
// it lets objects do: the resourceset-controller and the manifest-generator apply what an object
// outside their own namespace (RUNTIME_NAMESPACE, sluice-system) generates, when it names no
// spec.serviceAccountName, as its namespace's "default" ServiceAccount, which has no rights
// unless granted; the resourceset-controller's ExternalServices reach no address of the
// cluster's Service range (deploy/'s, kubeadm's and kind's, which the test API server uses too:
// testenv.ServiceCIDR). StartController puts them before the caller's flags, which may override
// them.
var DefaultArgs = map[string][]string{
	"resourceset-controller": {"--default-service-account=default", "--service-cidr=" + testenv.ServiceCIDR},
	"manifest-generator":     {"--default-service-account=default", "--service-cidr=" + testenv.ServiceCIDR},
	"gating-controller":      {"--service-cidr=" + testenv.ServiceCIDR},
}

// GatePolicyPath is the admission policy deploy/default installs, relative to the repository root:
// the API server accepts a Gate request only in the name of the user it authenticated.
const GatePolicyPath = "deploy/gating-controller/requested-by-policy.yaml"

// GateApprovalPolicyPath is the admission policy deploy/default installs, relative to the
// repository root: a GateApproval is created only in the name, and with the groups, of the user
// the API server authenticated, and never changed.
const GateApprovalPolicyPath = "deploy/gating-controller/gateapproval-identity-policy.yaml"

// SuspendPolicyPath is the admission policy deploy/default installs, relative to the repository
// root, that suspends a Flux Kustomization, HelmRelease or ImageUpdateAutomation bound to gates
// as the API server admits it (created, newly bound, or resumed while its gates hold it).
const SuspendPolicyPath = "deploy/gating-controller/suspend-gated-syncs.yaml"

// SuspendPolicyProbe is the name of the objects WaitSuspendPolicy creates (dry run only, in the
// default namespace) until the API server suspends them.
const SuspendPolicyProbe = "sluice-harness-suspend-policy-probe"

// suspendPolicyProbes are the kinds the suspend policy matches, each with a minimal valid spec.
var suspendPolicyProbes = []struct {
	gvk  schema.GroupVersionKind
	spec map[string]any
}{
	{fluxapi.Kustomization, map[string]any{
		"interval": "10m", "prune": false, "sourceRef": map[string]any{"kind": "GitRepository", "name": SuspendPolicyProbe}}},
	{fluxapi.HelmRelease, map[string]any{
		"interval": "10m", "chartRef": map[string]any{"kind": "OCIRepository", "name": SuspendPolicyProbe}}},
	{fluxapi.ImageUpdateAutomation, map[string]any{
		"interval": "10m", "sourceRef": map[string]any{"kind": "GitRepository", "name": SuspendPolicyProbe}}},
}

// harnessFieldOwner is the field manager of what the harness applies.
const harnessFieldOwner = "sluice-harness"

// InstallAdmissionPolicies installs every admission policy of deploy/default from under root, as
// deploy/default installs them: the Gate policy (InstallGatePolicy), the GateApproval identity
// policy and the suspend policy (InstallSuspendPolicy), and waits until the API server enforces
// the suspend policy.
func InstallAdmissionPolicies(ctx context.Context, c client.Client, root string) error {
	if err := InstallGatePolicy(ctx, c, root); err != nil {
		return err
	}
	if err := applyPolicy(ctx, c, filepath.Join(root, GateApprovalPolicyPath)); err != nil {
		return err
	}
	return InstallSuspendPolicy(ctx, c, root)
}

// InstallGatePolicy server-side applies the ValidatingAdmissionPolicy gate-requested-by and its
// binding from GatePolicyPath under root, as deploy/default installs them. The API server
// enforces a new policy within a second or so.
func InstallGatePolicy(ctx context.Context, c client.Client, root string) error {
	return applyPolicy(ctx, c, filepath.Join(root, GatePolicyPath))
}

// InstallSuspendPolicy server-side applies the MutatingAdmissionPolicy gated-syncs-suspended and
// its binding from SuspendPolicyPath under root, as deploy/default installs them, then waits
// until the API server enforces it (WaitSuspendPolicy).
func InstallSuspendPolicy(ctx context.Context, c client.Client, root string) error {
	if err := applyPolicy(ctx, c, filepath.Join(root, SuspendPolicyPath)); err != nil {
		return err
	}
	return WaitSuspendPolicy(ctx, c)
}

// applyPolicy server-side applies a policy and its binding from path (testenv.ApplyFile).
func applyPolicy(ctx context.Context, c client.Client, path string) error {
	applied, err := testenv.ApplyFile(ctx, c, path, harnessFieldOwner)
	if err != nil {
		return err
	}
	if applied != 2 {
		return fmt.Errorf("%s: expected the policy and its binding, found %d objects", path, applied)
	}
	return nil
}

// WaitSuspendPolicy waits (at most 30 seconds, or until ctx ends) until the API server suspends a
// gated Kustomization, HelmRelease and ImageUpdateAutomation as it admits them, so that a test
// does not race the policy's loading: it creates SuspendPolicyProbe of each kind as a dry run
// (nothing is stored) until the answer has `spec.suspend: true`. A kind whose CRD is not
// installed is skipped: without Flux's CRDs (installed later, by InstallFluxCRDs or
// StartKustomizeController) it returns at once; call it again after installing them, since the
// API server refuses gated objects of a new kind until the policy knows its schema.
func WaitSuspendPolicy(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, p := range suspendPolicyProbes {
		var last error
		for {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": runtime.DeepCopyJSON(p.spec)}}
			u.SetGroupVersionKind(p.gvk)
			u.SetNamespace(metav1.NamespaceDefault)
			u.SetName(SuspendPolicyProbe)
			u.SetAnnotations(map[string]string{gatesapi.GatesAnnotation: SuspendPolicyProbe})
			err := c.Create(ctx, u, client.DryRunAll)
			if meta.IsNoMatchError(err) {
				// The CRD is not installed: the API server serves no such kind.
				break
			}
			if err == nil {
				if suspend, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspend &&
					u.GetAnnotations()[gatesapi.SuspendedAnnotation] == "true" {
					break
				}
				err = errors.New("admitted without spec.suspend")
			}
			// Refused, while the policy does not know the schema of a CRD just installed.
			last = err
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for the MutatingAdmissionPolicy of %s to suspend a gated %s: %w", SuspendPolicyPath, p.gvk.Kind, last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
