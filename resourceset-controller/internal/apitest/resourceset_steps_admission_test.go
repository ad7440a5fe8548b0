package apitest

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The API server enforces the shape of flux-operator's steps and of Sluice's additions to
// inputsFrom and the prune limit.
func TestResourceSetStepsAndGuardsAdmission(t *testing.T) {
	ns := env.Namespace(t)
	step := func(name string) string {
		return fmt.Sprintf("\n    - name: %s\n      resources:\n        - apiVersion: v1\n          kind: ConfigMap\n          metadata:\n            name: %s", name, name)
	}
	many := ""
	for i := range 21 {
		many += step(fmt.Sprintf("s%d", i))
	}
	cases := []struct {
		name, spec, rejected string
	}{
		{name: "steps", spec: "steps:" + step("a") + step("b")},
		{name: "steps and resources", rejected: "spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate",
			spec: "resourcesTemplate: 'kind: ConfigMap'\n  steps:" + step("a")},
		{name: "duplicate step names", rejected: "step names must be unique", spec: "steps:" + step("a") + step("a")},
		{name: "empty step", rejected: "a step needs resources or a resourcesTemplate", spec: "steps:\n    - name: a\n      timeout: 1m"},
		{name: "step name", rejected: `spec.steps[0].name: Invalid value: "Migrate"`, spec: "steps:" + step("Migrate")},
		{name: "21 steps", rejected: "must have at most 20 items", spec: "steps:" + many},
		{name: "ConfigMap input", spec: "inputsFrom:\n    - apiVersion: v1\n      kind: ConfigMap\n      name: settings\n      minInputs: 1"},
		{name: "provider with apiVersion v1", rejected: "the apiVersion of a ResourceSetInputProvider is fluxcd.controlplane.io/v1",
			spec: "inputsFrom:\n    - apiVersion: v1\n      kind: ResourceSetInputProvider\n      name: p"},
		{name: "minInputs 0", rejected: "spec.inputsFrom[0].minInputs: Invalid value: 0", spec: "inputsFrom:\n    - kind: ResourceSetInputProvider\n      name: p\n      minInputs: 0"},
		{name: "maxPrune number", spec: "maxPrune: 3"},
		{name: "maxPrune percentage", spec: "maxPrune: 25%"},
		{name: "maxPrune word", rejected: `spec.maxPrune: Invalid value: "some"`, spec: "maxPrune: some"},
		{name: "maxPrune negative", rejected: "spec.maxPrune must not be negative", spec: "maxPrune: -1"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createYAML(t, ns, fmt.Sprintf("apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: steps-%d\nspec:\n  %s\n", i,
				strings.TrimPrefix(tc.spec, "\n")))
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}
