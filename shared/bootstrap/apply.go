package bootstrap

import (
	"fmt"
	"regexp"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultApplyConcurrency is the default of --apply-concurrency, shared/apply's
// DefaultConcurrency (a test keeps them equal). It is not imported from there: every controller
// links bootstrap, and only those that apply should link server-side apply.
const DefaultApplyConcurrency = 10

// ApplyOptions are the flags of the controllers that apply objects with shared/apply.
type ApplyOptions struct {
	// Concurrency is the number of objects of one apply dry-run and applied at once.
	Concurrency int
	// MaxPrune is --max-prune: the spec.maxPrune of the objects that set none; nil, no limit.
	MaxPrune *intstr.IntOrString
}

// maxPruneFlag is --max-prune as a pflag.Value: a number or a percentage, as spec.maxPrune.
type maxPruneFlag struct{ target **intstr.IntOrString }

func (f maxPruneFlag) String() string {
	if f.target == nil || *f.target == nil {
		return ""
	}
	return (*f.target).String()
}

func (f maxPruneFlag) Set(v string) error {
	if !maxPrunePattern.MatchString(v) {
		return fmt.Errorf("%q is not a number (10) or a percentage (25%%)", v)
	}
	parsed := intstr.Parse(v)
	*f.target = &parsed
	return nil
}

func (maxPruneFlag) Type() string { return "number|percent" }

var maxPrunePattern = regexp.MustCompile(`^(0|[1-9][0-9]*)%?$`)

// BindFlags registers --apply-concurrency on fs; kind names the object whose objects one apply
// covers (ManifestGeneration, ResourceSet), for the help text.
func (o *ApplyOptions) BindFlags(fs *pflag.FlagSet, kind string) {
	fs.IntVar(&o.Concurrency, "apply-concurrency", DefaultApplyConcurrency,
		fmt.Sprintf("The number of objects of one %s dry-run and applied at once.", kind))
	fs.Var(maxPruneFlag{&o.MaxPrune}, "max-prune",
		fmt.Sprintf("The most objects one reconciliation of a %s without spec.maxPrune may delete: a number (10) or a percentage of its inventory (25%%); unset, no limit.", kind))
}
