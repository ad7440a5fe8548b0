package gates_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/internal/testapi"
)

// The CRD generated from the gatesapi.Gates markers is what rejects bad specs at admission.
func TestGatesSpecValidation(t *testing.T) {
	ns := env.Namespace(t)
	cases := []struct {
		name    string
		spec    gatesapi.Gates
		invalid string
	}{
		{name: "require not in the enum", spec: gatesapi.Gates{Require: "most", Refs: []string{"a"}},
			invalid: `spec.gates.require: Unsupported value: "most"`},
		{name: "ref that is not a name", spec: gatesapi.Gates{Refs: []string{"Not_A_Name"}},
			invalid: `spec.gates.refs[0]`},
		{name: "ref with two slashes", spec: gatesapi.Gates{Refs: []string{"a/b/c"}}, invalid: `spec.gates.refs[0]`},
		{name: "duplicate refs", spec: gatesapi.Gates{Refs: []string{"a", "a"}}, invalid: `Duplicate value`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &testapi.Consumer{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "invalid-" + string(rune('a'+i))},
				Spec:       testapi.ConsumerSpec{Gates: &tc.spec},
			}
			err := env.Client.Create(context.Background(), c)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an admission rejection, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.invalid))
		})
	}
}

func TestGatesSpecDefaultsToAll(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	key := createConsumer(t, ns, "defaulted", &gatesapi.Gates{Refs: []string{"a", "other/b"}})

	got := &testapi.Consumer{}
	g.Expect(env.Client.Get(context.Background(), key, got)).To(Succeed())
	g.Expect(got.Spec.Gates.Require).To(Equal(gatesapi.RequireAll))
	g.Expect(gates.IndexRefs(got)).To(Equal([]string{ns + "/a", "other/b"}))
	g.Expect(gates.Of(got)).To(Equal(got.Spec.Gates))
	g.Expect(client.ObjectKeyFromObject(got)).To(Equal(key))
}
