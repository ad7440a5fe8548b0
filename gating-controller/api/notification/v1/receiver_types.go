package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReceiverKind is the kind of Receiver objects.
const ReceiverKind = "Receiver"

// ReceiverWebhookPath is the prefix of every webhook path: /hook/<hex digest>.
const ReceiverWebhookPath = "/hook/"

// The values of spec.type: Flux's, plus gitea.
const (
	GenericReceiver     = "generic"
	GenericHMACReceiver = "generic-hmac"
	GenericOIDCReceiver = "generic-oidc"
	GitHubReceiver      = "github"
	// GiteaReceiver is Sluice's: Gitea's own headers (X-Gitea-Signature, X-Gitea-Event,
	// X-Gitea-Delivery). Flux takes Gitea's deliveries as `github`, which works here too.
	GiteaReceiver     = "gitea"
	GitLabReceiver    = "gitlab"
	BitbucketReceiver = "bitbucket"
	HarborReceiver    = "harbor"
	DockerHubReceiver = "dockerhub"
	QuayReceiver      = "quay"
	GCRReceiver       = "gcr"
	NexusReceiver     = "nexus"
	ACRReceiver       = "acr"
	CDEventsReceiver  = "cdevents"
)

// DefaultOIDCAudience is the audience a generic-oidc provider expects when it names none.
const DefaultOIDCAudience = "notification-controller"

// TokenKey is the key of the token in the Secret of spec.secretRef.
const TokenKey = "token"

// ReceiverSpec is what a Receiver listens for and what it asks to reconcile.
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-oidc' || (has(self.oidcProviders) && size(self.oidcProviders) > 0)",message="generic-oidc receivers must define at least one oidcProvider"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || !has(self.oidcProviders) || size(self.oidcProviders) == 0",message="oidcProviders can only be set when type is generic-oidc"
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-oidc' || !has(self.secretRef)",message="secretRef cannot be set when type is generic-oidc"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || has(self.secretRef)",message="secretRef is required when type is not generic-oidc"
type ReceiverSpec struct {
	// Type is the sender of the webhooks: it decides how a request is authenticated and how its
	// payload and event are read.
	// +kubebuilder:validation:Enum=generic;generic-hmac;generic-oidc;github;gitea;gitlab;bitbucket;harbor;dockerhub;quay;gcr;nexus;acr;cdevents
	// +required
	Type string `json:"type"`

	// Interval at which the Receiver is reconciled with its Secret (default 10m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:default:="10m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Events are the event types the Receiver acts on, compared without regard to case (`push`
	// for GitHub and Gitea, `Push Hook` for GitLab, `repo:refs_changed` for Bitbucket Server);
	// empty, every event.
	// +optional
	Events []string `json:"events,omitempty"`

	// Resources are the objects whose reconciliation an accepted request asks for.
	// +required
	Resources []ReceiverResource `json:"resources"`

	// ResourceFilter is a CEL expression returning a bool, evaluated for each object of Resources
	// when a request is accepted, with the object's metadata as `res` and the JSON body of the
	// request as `req`; an object for which it is false is not asked to reconcile. An expression
	// that does not compile stalls the Receiver.
	// +optional
	ResourceFilter string `json:"resourceFilter,omitempty"`

	// SecretRef names a Secret of the Receiver's namespace whose `token` key salts the webhook
	// path and, depending on the type, authenticates requests. Required unless the type is
	// generic-oidc, which must not set it.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// OIDCProviders are the issuers whose tokens authenticate the requests of a generic-oidc
	// Receiver.
	// +listType=map
	// +listMapKey=issuerURL
	// +optional
	OIDCProviders []OIDCProvider `json:"oidcProviders,omitempty"`

	// Suspend stops the handling of requests (answered 503) and the reconciliation of the
	// Receiver.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ReceiverResource is one entry of spec.resources: a reference, with an optional CEL filter of its
// own.
type ReceiverResource struct {
	CrossNamespaceObjectReference `json:",inline"`

	// Filter is a CEL expression returning a bool, evaluated like spec.resourceFilter for the
	// objects this entry selects; an object is asked to reconcile only when both are true.
	// +optional
	Filter string `json:"filter,omitempty"`
}

// OIDCProvider is an issuer of the tokens a generic-oidc Receiver accepts.
type OIDCProvider struct {
	// IssuerURL is the issuer's URL, used for discovery; it must equal the token's `iss` claim.
	// +kubebuilder:validation:Pattern="^https?://"
	// +required
	IssuerURL string `json:"issuerURL"`

	// Audience is the `aud` claim the tokens must carry (default `notification-controller`).
	// +optional
	Audience string `json:"audience,omitempty"`

	// Variables are named CEL expressions over the token's `claims`, evaluated in order and read
	// by the later ones and the validations as `vars.<name>`.
	// +optional
	Variables []OIDCVariable `json:"variables,omitempty"`

	// Validations are CEL expressions over the claims and variables that must all be true for a
	// request to be accepted.
	// +kubebuilder:validation:MinItems=1
	// +required
	Validations []OIDCValidation `json:"validations"`
}

// GetAudience is the audience the provider expects.
func (in *OIDCProvider) GetAudience() string {
	if in.Audience != "" {
		return in.Audience
	}
	return DefaultOIDCAudience
}

// OIDCVariable is a named CEL expression of a generic-oidc provider.
type OIDCVariable struct {
	// Name of the variable, a CEL identifier.
	// +required
	Name string `json:"name"`

	// Expression whose value the variable takes.
	// +required
	Expression string `json:"expression"`
}

// OIDCValidation is a condition a token's claims must meet.
type OIDCValidation struct {
	// Expression is a CEL expression returning a bool.
	// +required
	Expression string `json:"expression"`

	// Message is returned to the caller when the expression is false.
	// +required
	Message string `json:"message"`
}

// ReceiverStatus is what the controller observed of the Receiver.
type ReceiverStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions of the Receiver: Ready, Reconciling, Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// WebhookPath is the path the Receiver is served at: /hook/ followed by the hex SHA-256 of
	// the token, the name and the namespace, concatenated.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`

	// ObservedGeneration is the last generation of the spec the controller handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// GetConditions returns the conditions of the Receiver.
func (in *Receiver) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the Receiver.
func (in *Receiver) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetWebhookPath is the path the Receiver is served at with this token:
// /hook/<hex of sha256(token + name + namespace)>, as Flux computes it.
func (in *Receiver) GetWebhookPath(token string) string {
	digest := sha256.Sum256([]byte(token + in.GetName() + in.GetNamespace()))
	return ReceiverWebhookPath + hex.EncodeToString(digest[:])
}

// GetInterval is spec.interval, 10 minutes when unset.
func (in *Receiver) GetInterval() time.Duration {
	if in.Spec.Interval != nil {
		return in.Spec.Interval.Duration
	}
	return 10 * time.Minute
}

// +kubebuilder:storageversion
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"

// Receiver is an incoming webhook that asks Flux and Sluice objects to reconcile.
type Receiver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReceiverSpec `json:"spec,omitempty"`
	// +kubebuilder:default:={"observedGeneration":-1}
	Status ReceiverStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ReceiverList is a list of Receivers.
type ReceiverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Receiver `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Receiver{}, &ReceiverList{})
}
