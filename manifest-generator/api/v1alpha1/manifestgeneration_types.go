package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/history"
)

// ManifestGenerationKind is the kind of ManifestGeneration objects.
const ManifestGenerationKind = "ManifestGeneration"

// Kinds of the sources a ManifestGeneration reads (source.toolkit.fluxcd.io).
const (
	// GitRepositoryKind is the kind of a Git repository source.
	GitRepositoryKind = "GitRepository"
	// OCIRepositoryKind is the kind of an OCI artifact source.
	OCIRepositoryKind = "OCIRepository"
)

// Defaults of the ManifestGeneration spec, also applied by the API server.
const (
	// DefaultPath is the target path when spec.path is empty: the root of the artifact.
	DefaultPath = "./"
	// DefaultTimeout is the default of the controller's --sync-timeout: the sync timeout, and the
	// timeout of each generator command, when spec.timeout is unset (the one minute of the
	// .flux.yaml documentation).
	DefaultTimeout = time.Minute
)

// ManifestGenerationSpec says which target path of which source to generate, apply and prune.
type ManifestGenerationSpec struct {
	// SourceRef is the GitRepository or OCIRepository, in the same namespace, whose artifact holds
	// the target path.
	// +required
	SourceRef SourceReference `json:"sourceRef"`

	// Path is the target path, relative to the root of the artifact (default ./). The .flux.yaml
	// is looked up in it and its parents; without one, the YAML files under it are applied as they
	// are.
	// +kubebuilder:default="./"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="spec.path must be relative to the root of the source, without .. elements"
	// +optional
	Path string `json:"path,omitempty"`

	// Interval at which the target path is generated and applied again, correcting drift.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of a sync (fetch, generate, apply, health checks), also the timeout of each
	// generator command without its own (default: the controller's --sync-timeout, 1m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Prune deletes the objects that were applied before and are no longer generated
	// (default true).
	// +kubebuilder:default=true
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// MaxPrune is the most objects one sync may delete: a number (`10`) or a percentage of the
	// inventory (`25%`, rounded down). A sync that would delete more applies and prunes nothing,
	// with Ready=False and the reason PruneLimitExceeded, or puts the deletion to the gate of
	// spec.deletionApproval. Unset: the controller's --max-prune (none by default). Deleting the
	// ManifestGeneration is not limited.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)%?$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="spec.maxPrune must not be negative"
	// +optional
	MaxPrune *intstr.IntOrString `json:"maxPrune,omitempty"`

	// DeletionApproval puts a deletion beyond spec.maxPrune to the approvers of a gate: the
	// ManifestGeneration opens a request on the gate for the set of objects it would delete, and
	// deletes exactly that set once approved.
	// +optional
	DeletionApproval *gatesapi.DeletionApproval `json:"deletionApproval,omitempty"`

	// AllowEmpty accepts an empty generator output while spec.prune is set, which deletes every
	// object applied before; without it such an output is refused (BuildFailed).
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// Wait makes the sync wait, within spec.timeout, for every applied object to become ready.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// ServiceAccountName is the ServiceAccount in the same namespace that applies and prunes the
	// objects (default: the controller's --default-service-account, or the controller itself).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Env are the environment variables of the generator commands: they run with only these, and
	// PATH and HOME which the controller sets; the controller's own environment is not passed on.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Egress lets the generator and updater commands reach the network, for remote kustomize
	// bases and remote Helm charts: they then have the network of their session's pod, which
	// the namespace's NetworkPolicies bound. Without it they may open no socket but a Unix one.
	// The controller's --session-egress=false refuses it.
	// +optional
	Egress bool `json:"egress,omitempty"`

	// Suspend stops the reconciliation of this ManifestGeneration.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates hold the ManifestGeneration on its last applied revision while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`

	// Automation releases newer image tags to the workloads annotated `fluxcd.io/automated:
	// "true"`, through ManifestUpdates; off when unset.
	// +optional
	Automation *Automation `json:"automation,omitempty"`
}

// SourceReference names the source of a ManifestGeneration in its own namespace.
type SourceReference struct {
	// APIVersion of the source (default: the version the controller reads).
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: GitRepository or OCIRepository.
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// EnvVar is an environment variable of the generator commands.
// +kubebuilder:validation:XValidation:rule="!(self.name in ['PATH', 'HOME'])",message="PATH and HOME are set by the controller and cannot be overridden in spec.env"
// +kubebuilder:validation:XValidation:rule="!self.name.startsWith('FLUX_')",message="FLUX_ variables carry the update request to updaters and cannot be set in spec.env"
type EnvVar struct {
	// Name of the variable, a C identifier.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern="^[A-Za-z_][A-Za-z0-9_]*$"
	// +required
	Name string `json:"name"`

	// Value of the variable.
	// +optional
	Value string `json:"value,omitempty"`
}

// ManifestGenerationStatus is the observed state of a ManifestGeneration.
type ManifestGenerationStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Blocked, AutomationFailed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAppliedRevision is the source revision of the last successful sync.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAttemptedRevision is the source revision of the last sync, successful or not.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// ConfigFile is the .flux.yaml the last sync used, relative to the root of the artifact;
	// empty when the target path was applied as raw YAML.
	// +optional
	ConfigFile string `json:"configFile,omitempty"`

	// Inventory lists the objects applied by the last successful sync.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	// Automation is what the last registry scan found and released; absent without
	// spec.automation.
	// +optional
	Automation *AutomationStatus `json:"automation,omitempty"`

	// History is the last syncs, one snapshot per outcome (the source revision applied, or the
	// digest of the spec when the build failed, with the Ready reason), the most recent first
	// (at most 5), as Flux's Kustomization keeps it.
	// +optional
	History history.History `json:"history,omitempty"`

	// PendingDeletion is the set of objects a sync would delete beyond spec.maxPrune, while it
	// waits on spec.deletionApproval's gate, or after its rejection.
	// +optional
	PendingDeletion *gatesapi.DeletionSet `json:"pendingDeletion,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ManifestGeneration generates the manifests of one target path of a source, with the generators
// of its .flux.yaml or as raw YAML, applies them with server-side apply and prunes what left.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mgen
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Revision",type="string",JSONPath=".status.lastAppliedRevision"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type ManifestGeneration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ManifestGenerationSpec   `json:"spec"`
	Status ManifestGenerationStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ManifestGeneration) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *ManifestGeneration) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *ManifestGeneration) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *ManifestGeneration) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *ManifestGeneration) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *ManifestGeneration) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// GetInterval is spec.interval.
func (in *ManifestGeneration) GetInterval() time.Duration { return in.Spec.Interval.Duration }

// GetTimeout is spec.timeout, def (the controller's --sync-timeout) when unset.
func (in *ManifestGeneration) GetTimeout(def time.Duration) time.Duration {
	if in.Spec.Timeout == nil || in.Spec.Timeout.Duration <= 0 {
		return def
	}
	return in.Spec.Timeout.Duration
}

// GetPath is spec.path, DefaultPath (./) when empty.
func (in *ManifestGeneration) GetPath() string {
	if in.Spec.Path == "" {
		return DefaultPath
	}
	return in.Spec.Path
}

// GetPrune is spec.prune, true when unset.
func (in *ManifestGeneration) GetPrune() bool { return in.Spec.Prune == nil || *in.Spec.Prune }

// ManifestGenerationList is a list of ManifestGenerations.
// +kubebuilder:object:root=true
type ManifestGenerationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestGeneration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ManifestGeneration{}, &ManifestGenerationList{})
}
