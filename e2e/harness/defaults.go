package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The harness runs the system with the secure defaults of deploy/, so that what the tests and
// `make dev` show is what a cluster deployed from deploy/default does.

// DefaultArgs are the flags deploy/ gives a controller beyond the common ones, that change what
// it lets objects do: the resourceset-controller and the manifest-generator apply what an object
// outside their own namespace (RUNTIME_NAMESPACE, sluice-system) generates, when it names no
// spec.serviceAccountName, as its namespace's "default" ServiceAccount, which has no rights
// unless granted. StartController puts them before the caller's flags, which may override them.
var DefaultArgs = map[string][]string{
	"resourceset-controller": {"--default-service-account=default"},
	"manifest-generator":     {"--default-service-account=default"},
}

// GatePolicyPath is the admission policy deploy/default installs, relative to the repository root:
// the API server accepts a Gate request only in the name of the user it authenticated.
const GatePolicyPath = "deploy/gating-controller/requested-by-policy.yaml"

// InstallGatePolicy server-side applies the ValidatingAdmissionPolicy gate-requested-by and its
// binding from GatePolicyPath under root, as deploy/default installs them. The API server
// enforces a new policy within a second or so.
func InstallGatePolicy(ctx context.Context, c client.Client, root string) error {
	path := filepath.Join(root, GatePolicyPath)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	applied := 0
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("sluice-harness"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), u.GetName(), path, err)
		}
		applied++
	}
	if applied != 2 {
		return fmt.Errorf("%s: expected the policy and its binding, found %d objects", path, applied)
	}
	return nil
}
