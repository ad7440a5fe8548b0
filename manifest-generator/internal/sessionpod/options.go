package sessionpod

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Options configure the session pods; they are the controller's flags.
type Options struct {
	// Enabled runs each session in a pod of its own (--session-pods).
	Enabled bool
	// Image of the pods (--session-image); the controller's own image when empty.
	Image string
	// CPU and Memory bound the pod's container (--session-cpu, --session-memory); Disk bounds
	// its files (--session-disk), which are in memory: the container's memory limit is
	// Memory + Disk, so that a full disk fails with ENOSPC, not with an out-of-memory kill.
	CPU, Memory, Disk resource.Quantity
	// StartTimeout bounds the wait for a pod to run (--session-start-timeout).
	StartTimeout time.Duration
	// MaxDuration bounds a pod's life (activeDeadlineSeconds) when the session's context has
	// no deadline; with one, the pod lives until it, never longer (--session-max-duration).
	MaxDuration time.Duration
	// Limits are the runner's per-session limits, applied by the session process in the pod.
	Limits runner.Limits
}

// Flag names, also named in the errors that report them.
const (
	flagEnabled      = "session-pods"
	flagImage        = "session-image"
	flagCPU          = "session-cpu"
	flagMemory       = "session-memory"
	flagDisk         = "session-disk"
	flagStartTimeout = "session-start-timeout"
	flagMaxDuration  = "session-max-duration"
)

// DefaultOptions are the flags' defaults: a session has what kustomize and helm need on a large
// repository, and no tenant's session can take more.
func DefaultOptions() Options {
	return Options{
		CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi"), Disk: resource.MustParse("1Gi"),
		StartTimeout: 2 * time.Minute, MaxDuration: 30 * time.Minute, Limits: runner.DefaultLimits,
	}
}

// BindFlags registers the options as flags, with o's values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, flagEnabled, o.Enabled,
		"Run each session of .flux.yaml commands (a sync or an update of one object) in a pod of its own, in the object's namespace, instead of the runner: "+
			"the container runtime isolates tenants, the kubelet bounds each session's memory, CPU and files.")
	fs.StringVar(&o.Image, flagImage, o.Image, "The image of the session pods; empty for the controller's own (read from its Pod, POD_NAME and RUNTIME_NAMESPACE).")
	fs.Var(quantity{&o.CPU}, flagCPU, "The CPU limit of a session pod.")
	fs.Var(quantity{&o.Memory}, flagMemory, "The memory limit of a session pod's commands.")
	fs.Var(quantity{&o.Disk}, flagDisk, "The size of a session pod's files (its tree, HOME and TMPDIR, in memory): writes past it fail with ENOSPC.")
	fs.DurationVar(&o.StartTimeout, flagStartTimeout, o.StartTimeout, "How long a session pod may take to run (scheduling, quota) before the session fails.")
	fs.DurationVar(&o.MaxDuration, flagMaxDuration, o.MaxDuration, "The longest life of a session pod (its activeDeadlineSeconds).")
}

// Validate checks the options of enabled session pods.
func (o *Options) Validate() error {
	if !o.Enabled {
		return nil
	}
	for name, q := range map[string]resource.Quantity{flagCPU: o.CPU, flagMemory: o.Memory, flagDisk: o.Disk} {
		if q.Sign() <= 0 {
			return fmt.Errorf("--%s must be positive", name)
		}
	}
	if o.StartTimeout <= 0 || o.MaxDuration <= 0 {
		return fmt.Errorf("--%s and --%s must be positive", flagStartTimeout, flagMaxDuration)
	}
	return nil
}

// quantity is a resource.Quantity flag.
type quantity struct{ q *resource.Quantity }

func (v quantity) String() string {
	if v.q == nil {
		return ""
	}
	return v.q.String()
}

func (v quantity) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*v.q = q
	return nil
}

func (quantity) Type() string { return "quantity" }
