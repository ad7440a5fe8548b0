package bootstrap

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/intstr"

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

// --max-prune takes what spec.maxPrune takes, a number or a percentage, and refuses the rest;
// unset, there is no limit.
func TestMaxPruneFlag(t *testing.T) {
	parse := func(args ...string) (*ApplyOptions, error) {
		var o ApplyOptions
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.BindFlags(fs, "ResourceSet")
		return &o, fs.Parse(args)
	}
	o, err := parse()
	if err != nil || o.MaxPrune != nil {
		t.Fatalf("unset: %v, %v", o.MaxPrune, err)
	}
	for arg, want := range map[string]string{"10": "10", "25%": "25%", "0": "0"} {
		o, err := parse("--max-prune=" + arg)
		if err != nil || o.MaxPrune == nil || o.MaxPrune.String() != want {
			t.Fatalf("--max-prune=%s: %v, %v", arg, o.MaxPrune, err)
		}
	}
	if o, _ := parse("--max-prune=25%"); o.MaxPrune.Type != intstr.String {
		t.Fatalf("25%% is a percentage: %#v", o.MaxPrune)
	}
	for _, bad := range []string{"-1", "ten", "1.5", "%", "05"} {
		if _, err := parse("--max-prune=" + bad); err == nil {
			t.Fatalf("--max-prune=%s was accepted", bad)
		}
	}
}
