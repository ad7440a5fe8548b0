package fluxyaml

import (
	"strings"
	"time"
)

// What a .flux.yaml command gets when its ManifestGeneration and the controller's flags say
// nothing; the runner (package runner) applies them.
const (
	// DefaultTimeout is Flux v1's default for sync commands.
	DefaultTimeout = time.Minute
	// DefaultMaxOutput bounds what a command may print on stdout.
	DefaultMaxOutput int64 = 64 << 20
	// DefaultPath is the PATH commands get when none is configured.
	DefaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// IsReservedEnv reports whether a user may not set name through spec.env: PATH and HOME are
// fixed by the controller and FLUX_* carry the update request, which a user value must not
// shadow.
func IsReservedEnv(name string) bool {
	return name == "PATH" || name == "HOME" || strings.HasPrefix(name, "FLUX_")
}
