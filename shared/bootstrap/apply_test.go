package bootstrap

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/sluice-gitops/sluice/shared/apply"
)

// --apply-concurrency defaults to what shared/apply calls its default, and is read.
func TestApplyConcurrencyFlag(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultApplyConcurrency).To(Equal(apply.DefaultConcurrency))

	var o ApplyOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs, "ResourceSet")
	g.Expect(o.Concurrency).To(Equal(apply.DefaultConcurrency))
	g.Expect(fs.Lookup("apply-concurrency").Usage).To(ContainSubstring("one ResourceSet"))
	g.Expect(fs.Parse([]string{"--apply-concurrency=3"})).To(Succeed())
	g.Expect(o.Concurrency).To(Equal(3))
}
