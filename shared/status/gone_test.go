package status

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
)

func TestGone(t *testing.T) {
	g := NewWithT(t)
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "gitrepositories"}, "podinfo")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "gitrepositories"}, "podinfo", errors.New("changed"))

	g.Expect(Gone(nil)).To(BeFalse())
	g.Expect(Gone(notFound)).To(BeTrue())
	// What the patch helper returns when the conditions and the status patches both miss.
	g.Expect(Gone(kerrors.NewAggregate([]error{notFound, nil, notFound}))).To(BeTrue())
	g.Expect(Gone(kerrors.NewAggregate([]error{notFound, conflict}))).To(BeFalse())
	g.Expect(Gone(errors.New("connection refused"))).To(BeFalse())
}
