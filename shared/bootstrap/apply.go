package bootstrap

import (
	"fmt"

	"github.com/spf13/pflag"
)

// DefaultApplyConcurrency is the default of --apply-concurrency, shared/apply's
// DefaultConcurrency (a test keeps them equal). It is not imported from there: every controller
// links bootstrap, and only those that apply should link server-side apply.
const DefaultApplyConcurrency = 10

// ApplyOptions are the flags of the controllers that apply objects with shared/apply.
type ApplyOptions struct {
	// Concurrency is the number of objects of one apply dry-run and applied at once.
	Concurrency int
}

// BindFlags registers --apply-concurrency on fs; kind names the object whose objects one apply
// covers (ManifestGeneration, ResourceSet), for the help text.
func (o *ApplyOptions) BindFlags(fs *pflag.FlagSet, kind string) {
	fs.IntVar(&o.Concurrency, "apply-concurrency", DefaultApplyConcurrency,
		fmt.Sprintf("The number of objects of one %s dry-run and applied at once.", kind))
}
