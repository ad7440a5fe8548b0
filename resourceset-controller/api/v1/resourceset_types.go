package v1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/history"
)

// ResourceSetKind is the kind of ResourceSet objects.
const ResourceSetKind = "ResourceSet"

// Input strategies: how the inputs of several sources are combined.
const (
	// InputStrategyFlatten renders the resources once per input of every source (the union).
	InputStrategyFlatten = "Flatten"
	// InputStrategyPermute renders the resources once per combination of one input from each
	// source (the Cartesian product).
	InputStrategyPermute = "Permute"
)

// ResourceSetSpec is the set of templated resources and the inputs they are rendered with.
// +kubebuilder:validation:XValidation:rule="!has(self.steps) || size(self.steps) == 0 || ((!has(self.resources) || size(self.resources) == 0) && (!has(self.resourcesTemplate) || size(self.resourcesTemplate) == 0))",message="spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate: move them into a step"
// +kubebuilder:validation:XValidation:rule="!has(self.isolateInputFailures) || !self.isolateInputFailures || !has(self.steps) || size(self.steps) == 0",message="spec.isolateInputFailures does not apply to spec.steps: a step whose input fails stops the steps after it"
type ResourceSetSpec struct {
	// CommonMetadata is set on every generated object, overriding the same keys of its templates.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// Inputs is a list of static inputs; each is a map of names to values, referenced in the
	// templates as `<< inputs.name >>`.
	// +optional
	Inputs []ResourceSetInput `json:"inputs,omitempty"`

	// InputDefaults are values every input starts from: a key an input (or, under Permute, a
	// combination) does not set takes its value from here. A Sluice addition (flux-operator
	// #225).
	// +optional
	InputDefaults ResourceSetInput `json:"inputDefaults,omitempty"`

	// InputsFrom selects ResourceSetInputProviders in the same namespace whose exported inputs are
	// added to spec.inputs.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	InputsFrom []InputProviderReference `json:"inputsFrom,omitempty"`

	// InputStrategy says how inputs from several sources are combined (default Flatten).
	// +optional
	InputStrategy *InputStrategySpec `json:"inputStrategy,omitempty"`

	// Resources are the templated objects, rendered once per input; `<< >>` are the template
	// delimiters.
	// +kubebuilder:validation:items:Type=object
	// +optional
	Resources []*apiextensionsv1.JSON `json:"resources,omitempty"`

	// ResourcesTemplate is a multi-document YAML template of more objects; spec.resources wins
	// when both define the same object.
	// +optional
	ResourcesTemplate string `json:"resourcesTemplate,omitempty"`

	// Steps are groups of resources applied one after another, each health-checked before the
	// next; in place of resources and resourcesTemplate.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(x, x.name == s.name))",message="step names must be unique"
	// +listType=atomic
	// +optional
	Steps []ResourceSetStep `json:"steps,omitempty"`

	// DependsOn lists objects that must exist (and, with ready, be ready) before the resources are
	// applied.
	// +optional
	DependsOn []Dependency `json:"dependsOn,omitempty"`

	// ServiceAccountName is the ServiceAccount in the same namespace that applies the resources.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Wait makes the reconciliation wait for every applied object to become ready.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// Gates hold the ResourceSet on its last applied resources while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`

	// MaxPrune is the most objects one reconciliation may delete: a number (`10`) or a
	// percentage of the inventory (`25%`, rounded down). A reconciliation that would delete more
	// applies and prunes nothing, with Ready=False and the reason PruneLimitExceeded, until the
	// limit is raised or the annotation resourceset.fluxcd.controlplane.io/allow-prune names its
	// revision. A Sluice addition; unset, no limit. Deleting the ResourceSet is not limited.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)%?$`
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="spec.maxPrune must not be negative"
	// +optional
	MaxPrune *intstr.IntOrString `json:"maxPrune,omitempty"`

	// DeletionApproval puts a deletion beyond spec.maxPrune to the approvers of a gate: the
	// ResourceSet opens a request on the gate for the set of objects it would delete (its digest
	// as the revision), and deletes exactly that set once approved. Unset, such a deletion stops
	// the ResourceSet until the limit is raised. A Sluice addition.
	// +optional
	DeletionApproval *gatesapi.DeletionApproval `json:"deletionApproval,omitempty"`

	// IsolateInputFailures applies the objects of the inputs whose templates render when others
	// fail: the failed inputs are named in status.failedInputs, their objects applied before stay,
	// and nothing is pruned until every input renders. Unset, one failing input stops the whole
	// ResourceSet (BuildFailed). A Sluice addition; not with spec.steps.
	// +optional
	IsolateInputFailures bool `json:"isolateInputFailures,omitempty"`
}

// ResourceSetStep is one group of resources of spec.steps.
// +kubebuilder:validation:XValidation:rule="(has(self.resources) && size(self.resources) > 0) || (has(self.resourcesTemplate) && size(self.resourcesTemplate) > 0)",message="a step needs resources or a resourcesTemplate"
type ResourceSetStep struct {
	// Name of the step, a DNS label unique in the ResourceSet.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Resources of the step, as spec.resources.
	// +kubebuilder:validation:items:Type=object
	// +optional
	Resources []*apiextensionsv1.JSON `json:"resources,omitempty"`

	// ResourcesTemplate of the step, as spec.resourcesTemplate.
	// +optional
	ResourcesTemplate string `json:"resourcesTemplate,omitempty"`

	// Timeout of the step's health check (default: the reconcile timeout).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// CommonMetadata holds the labels and annotations set on every generated object.
type CommonMetadata struct {
	// Labels set on every generated object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations set on every generated object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ResourceSetInput is one input: names mapped to arbitrary JSON values (strings, numbers,
// booleans, lists, objects).
type ResourceSetInput map[string]*apiextensionsv1.JSON

// InputProviderReference selects ResourceSetInputProviders in the ResourceSet's namespace, by name
// or by labels.
// +kubebuilder:validation:XValidation:rule="(has(self.name) && size(self.name) > 0) != has(self.selector)",message="exactly one of name or selector must be set"
// +kubebuilder:validation:XValidation:rule="self.kind != 'ResourceSetInputProvider' || self.apiVersion == 'fluxcd.controlplane.io/v1'",message="the apiVersion of a ResourceSetInputProvider is fluxcd.controlplane.io/v1"
type InputProviderReference struct {
	// APIVersion of the provider: fluxcd.controlplane.io/v1 (the default), or v1 for a ConfigMap
	// or a Secret, which also accept the default.
	// +kubebuilder:validation:Enum=fluxcd.controlplane.io/v1;v1
	// +kubebuilder:default=fluxcd.controlplane.io/v1
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the provider: ResourceSetInputProvider, or (a Sluice addition) ConfigMap or Secret,
	// each object of which is one input made of its data, read as the ResourceSet's account.
	// +kubebuilder:validation:Enum=ResourceSetInputProvider;ConfigMap;Secret
	// +required
	Kind string `json:"kind"`

	// Name of the provider.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// Selector selects providers by labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// MinInputs guards against a provider that suddenly exports too little (an API answering
	// an empty list, a filter gone wrong): while the providers of this reference export fewer
	// inputs than this in all, nothing is applied or pruned, the objects applied last stay, and
	// Ready is False with the reason InputsGuarded. A Sluice addition; unset, no guard.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinInputs *int32 `json:"minInputs,omitempty"`
}

// InputStrategySpec says how inputs from several sources are combined.
type InputStrategySpec struct {
	// Name is Flatten (every input of every source) or Permute (every combination of one input
	// from each source).
	// +kubebuilder:validation:Enum=Flatten;Permute
	// +kubebuilder:default=Flatten
	// +optional
	Name string `json:"name,omitempty"`

	// IncludeEmptyProviders applies to Permute only: when true, a provider that exports no
	// inputs makes the product empty (nothing is rendered); when false (the default), such a
	// provider is left out and the others still permute among themselves, as flux-operator's.
	// +optional
	IncludeEmptyProviders bool `json:"includeEmptyProviders,omitempty"`
}

// Dependency is an object that must exist, and optionally be ready, before the resources are
// applied.
type Dependency struct {
	// APIVersion of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`

	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the object; empty for cluster-scoped objects.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Ready requires the object's Ready condition to be True (or readyExpr to be true).
	// +optional
	Ready bool `json:"ready,omitempty"`

	// ReadyExpr is a CEL expression, evaluated on the object, that must return true.
	// +optional
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// ResourceSetStatus is the observed state of a ResourceSet.
type ResourceSetStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Blocked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Inventory lists the objects applied by the last successful reconciliation.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// LastAppliedRevision is the digest of the last applied set of objects.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	// ExternalChecksumRefs are the ConfigMaps and Secrets (`Kind/namespace/name`) that
	// checksumFrom annotations of the last reconciliation name and that this ResourceSet does not
	// generate: a change to one of them reconciles the ResourceSet.
	// +optional
	ExternalChecksumRefs []string `json:"externalChecksumRefs,omitempty"`

	// History is the last reconciliations that built or applied, one snapshot per outcome, the
	// most recent first (at most MaxHistory).
	// +optional
	History history.History `json:"history,omitempty"`

	// PendingDeletion is the set of objects a reconciliation would delete beyond spec.maxPrune,
	// while it waits on spec.deletionApproval's gate, or after its rejection.
	// +optional
	PendingDeletion *gatesapi.DeletionSet `json:"pendingDeletion,omitempty"`

	// FailedInputs are the inputs left out of the last reconciliation by
	// spec.isolateInputFailures, with why; empty when every input rendered.
	// +optional
	FailedInputs []FailedInput `json:"failedInputs,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ResourceSet renders a matrix of inputs through templated resources and applies the result.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=rset
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type ResourceSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceSetSpec   `json:"spec,omitempty"`
	Status ResourceSetStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ResourceSet) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *ResourceSet) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *ResourceSet) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *ResourceSet) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *ResourceSet) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *ResourceSet) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// IsDisabled reports whether the reconcile annotation pauses the ResourceSet.
func (in *ResourceSet) IsDisabled() bool { return isDisabled(in.GetAnnotations()) }

// GetInterval is the reconcileEvery annotation, DefaultInterval (1h) when unset or invalid.
func (in *ResourceSet) GetInterval() time.Duration {
	return durationAnnotation(in.GetAnnotations(), ReconcileEveryAnnotation, DefaultInterval)
}

// GetTimeout is the reconcileTimeout annotation, DefaultTimeout (5m) when unset or invalid.
func (in *ResourceSet) GetTimeout() time.Duration {
	return durationAnnotation(in.GetAnnotations(), ReconcileTimeoutAnnotation, DefaultTimeout)
}

// GetInputStrategy is the name of the input strategy, InputStrategyFlatten when unset.
func (in *ResourceSet) GetInputStrategy() string {
	if in.Spec.InputStrategy == nil || in.Spec.InputStrategy.Name == "" {
		return InputStrategyFlatten
	}
	return in.Spec.InputStrategy.Name
}

// IncludesEmptyProviders says whether a provider without inputs takes part in the Permute
// product (spec.inputStrategy.includeEmptyProviders).
func (in *ResourceSet) IncludesEmptyProviders() bool {
	return in.Spec.InputStrategy != nil && in.Spec.InputStrategy.IncludeEmptyProviders
}

// ResourceSetList is a list of ResourceSets.
// +kubebuilder:object:root=true
type ResourceSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceSet{}, &ResourceSetList{})
}

// FailedInput is an input whose templates failed, left out by spec.isolateInputFailures.
type FailedInput struct {
	// ID is the input's id.
	// +optional
	ID string `json:"id,omitempty"`
	// Message is the template's error, naming the input's place (inputs[i]).
	Message string `json:"message"`
}
