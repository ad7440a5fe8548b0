package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GateKeeperKind is the kind of GateKeeper objects.
const GateKeeperKind = "GateKeeper"

// GateKeeperType is how a keeper's schedule is written.
// +kubebuilder:validation:Enum=cronexpression
type GateKeeperType string

// CronExpression: standard 5-field cron expressions.
const CronExpression GateKeeperType = "cronexpression"

// CronJob lists cron expressions; a gate is kept in a state during every minute one of that
// state's expressions matches (`'* * 20-30 11 *'` is all of 20–30 November).
type CronJob struct {
	// Closed expressions keep the gate closed while they match.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Closed []string `json:"closed,omitempty"`
	// Opened expressions keep the gate opened while they match.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Opened []string `json:"opened,omitempty"`
}

// Window keeps the gate in a state from each activation of a cron schedule for a duration.
type Window struct {
	// Schedule is a 5-field cron expression: when the window starts.
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// Duration of the window.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="a window's duration must be longer than 0s"
	Duration metav1.Duration `json:"duration"`
	// State the gate is kept in during the window.
	State GateState `json:"state"`
}

// GateKeeperSpec schedules the state of one gate.
type GateKeeperSpec struct {
	// Gate is the name of the Gate, in the keeper's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Gate string `json:"gate"`

	// Type of the schedule (default `cronexpression`).
	// +kubebuilder:default=cronexpression
	// +optional
	Type GateKeeperType `json:"type,omitempty"`

	// TimeZone the schedules are read in, an IANA name (default UTC).
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// CronJob holds bare cron expressions.
	// +optional
	CronJob *CronJob `json:"cronjob,omitempty"`

	// Windows hold schedules with a duration.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Windows []Window `json:"windows,omitempty"`

	// Calendar reads periods from an iCalendar (RFC 5545) document: the gate is kept in
	// Calendar.State (default closed) during each of its events.
	// +optional
	Calendar *Calendar `json:"calendar,omitempty"`

	// Periods are one-off stretches of time the gate is kept in a state.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Periods []Period `json:"periods,omitempty"`

	// Runway closes the gate this long before each closed period starts (of the calendar,
	// the periods, the cron expressions and the windows alike), so nothing starts that cannot
	// finish before it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Runway *metav1.Duration `json:"runway,omitempty"`
}

// Calendar is an iCalendar document and the state its events keep the gate in. The document is
// read from a ConfigMap or from a file of a source's artifact.
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.sourceRef)",message="spec.calendar must set exactly one of configMapRef and sourceRef"
// +kubebuilder:validation:XValidation:rule="has(self.sourceRef) == has(self.path)",message="spec.calendar.path is required with sourceRef, and only with it"
type Calendar struct {
	// ConfigMapRef is the key of a ConfigMap, in the keeper's namespace, holding the document.
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`
	// SourceRef is a source (source.toolkit.fluxcd.io), in the keeper's namespace, whose
	// artifact holds the document at Path.
	// +optional
	SourceRef *CalendarSourceReference `json:"sourceRef,omitempty"`
	// Path of the document in the source's artifact, relative to its root
	// (freeze/calendar.ics).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="spec.calendar.path must be relative to the root of the artifact, without .. elements"
	// +optional
	Path string `json:"path,omitempty"`
	// State the gate is kept in during the calendar's events (default closed).
	// +kubebuilder:default=closed
	// +optional
	State GateState `json:"state,omitempty"`
}

// ConfigMapKeyRef names a key of a ConfigMap in the object's namespace.
type ConfigMapKeyRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the ConfigMap's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// Kinds of the sources a calendar is read from (source.toolkit.fluxcd.io).
const (
	GitRepositoryKind    = "GitRepository"
	OCIRepositoryKind    = "OCIRepository"
	BucketKind           = "Bucket"
	ExternalArtifactKind = "ExternalArtifact"
)

// CalendarSourceReference names a source in the keeper's namespace.
type CalendarSourceReference struct {
	// APIVersion of the source, of the group source.toolkit.fluxcd.io (default: the version
	// the controller reads, v1).
	// +kubebuilder:validation:XValidation:rule="self.startsWith('source.toolkit.fluxcd.io/')",message="spec.calendar.sourceRef.apiVersion must be of the group source.toolkit.fluxcd.io"
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the source.
	// +kubebuilder:validation:Enum=GitRepository;OCIRepository;Bucket;ExternalArtifact
	// +required
	Kind string `json:"kind"`
	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// Period keeps the gate in a state from Start until End.
type Period struct {
	// Name labels the period (optional), as a calendar event's SUMMARY does.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// Start is an RFC 3339 time (2026-12-24T18:00:00+01:00) or a date (2026-12-24: 00:00 in
	// spec.timeZone).
	// +kubebuilder:validation:MinLength=1
	Start string `json:"start"`
	// End, exclusive, written like Start: 2026-12-27 ends when 27 December begins.
	// +kubebuilder:validation:MinLength=1
	End string `json:"end"`
	// State the gate is kept in during the period (default closed).
	// +kubebuilder:default=closed
	// +optional
	State GateState `json:"state,omitempty"`
}

// GateKeeperActive is the state a keeper holds its gate in now.
// +kubebuilder:validation:Enum=closed;opened;none
type GateKeeperActive string

const (
	// ActiveClosed: a closed schedule matches now.
	ActiveClosed GateKeeperActive = "closed"
	// ActiveOpened: an opened schedule matches now, and no closed one.
	ActiveOpened GateKeeperActive = "opened"
	// ActiveNone: no schedule matches now.
	ActiveNone GateKeeperActive = "none"
)

// GateKeeperStatus is the observed state of a keeper.
type GateKeeperStatus struct {
	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: `Ready`, `Stalled` for a schedule that does not parse; `Ready=False` with
	// reason `CalendarFailed` while the calendar cannot be read.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Active is the state the keeper holds its gate in now.
	// +optional
	Active GateKeeperActive `json:"active,omitempty"`
	// NextTransitionAt is when Active changes next.
	// +optional
	NextTransitionAt *metav1.Time `json:"nextTransitionAt,omitempty"`
	// LastHandledReconcileAt is the value of the last reconcile.fluxcd.io/requestedAt handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// GateKeeper opens and closes a gate on a schedule.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Gate",type="string",JSONPath=".spec.gate"
// +kubebuilder:printcolumn:name="Active",type="string",JSONPath=".status.active"
// +kubebuilder:printcolumn:name="Next",type="string",JSONPath=".status.nextTransitionAt"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type GateKeeper struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GateKeeperSpec   `json:"spec,omitempty"`
	Status GateKeeperStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *GateKeeper) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *GateKeeper) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GateKeeperList is a list of keepers.
// +kubebuilder:object:root=true
type GateKeeperList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GateKeeper `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GateKeeper{}, &GateKeeperList{})
}
