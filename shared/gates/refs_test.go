package gates_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/internal/testapi"
)

// The annotation is the portable form of a typed object's gates: it binds an object whose
// spec.gates was dropped (by `flux export`, say), spec.gates wins over it, and one that does not
// parse is an error, not an object without gates.
func TestSpecReadsTheGatesAnnotation(t *testing.T) {
	g := NewWithT(t)
	consumer := func(spec *gatesapi.Gates, annotation string) *testapi.Consumer {
		c := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "c"}, Spec: testapi.ConsumerSpec{Gates: spec}}
		if annotation != "" {
			c.Annotations = map[string]string{gatesapi.GatesAnnotation: annotation}
		}
		return c
	}

	got, err := gates.Spec(consumer(nil, "oneOf: freeze, flux-system/bypass"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(&gatesapi.Gates{Require: gatesapi.RequireOneOf, Refs: []string{"freeze", "flux-system/bypass"}}))
	g.Expect(gates.IndexRefs(consumer(nil, "freeze"))).To(Equal([]string{"apps/freeze"}), "the index knows it too")

	got, err = gates.Spec(consumer(&gatesapi.Gates{Refs: []string{"spec-gate"}}, "freeze"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Refs).To(Equal([]string{"spec-gate"}))

	_, err = gates.Spec(consumer(nil, "One-Of: freeze"))
	g.Expect(err).To(MatchError(ContainSubstring(gatesapi.GatesAnnotation)))
	g.Expect(gates.Of(consumer(nil, "One-Of: freeze"))).To(BeNil())

	got, err = gates.Spec(consumer(nil, ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeNil())
}
