package v1beta3

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProviderKind is the kind of Provider objects.
const ProviderKind = "Provider"

// The values of spec.type that the gating-controller sends to; the schema accepts every type of
// Flux's, and an Alert of another type is refused with an event saying so (docs/providers.md).
const (
	GenericProvider     = "generic"
	GenericHMACProvider = "generic-hmac"
	SlackProvider       = "slack"
	MSTeamsProvider     = "msteams"
	DiscordProvider     = "discord"
	GiteaProvider       = "gitea"
	GitHubProvider      = "github"
	GitLabProvider      = "gitlab"
)

// ProviderSpec says where and how events are sent.
// +kubebuilder:validation:XValidation:rule="self.type == 'github' || self.type == 'gitlab' || self.type == 'gitea' || self.type == 'bitbucketserver' || self.type == 'bitbucket' || self.type == 'azuredevops' || !has(self.commitStatusExpr)", message="spec.commitStatusExpr is only supported for the 'github', 'gitlab', 'gitea', 'bitbucketserver', 'bitbucket', 'azuredevops' provider types"
type ProviderSpec struct {
	// Type of the endpoint.
	// +kubebuilder:validation:Enum=slack;discord;msteams;rocket;generic;generic-hmac;github;gitlab;gitea;giteapullrequestcomment;bitbucketserver;bitbucket;azuredevops;googlechat;googlepubsub;webex;sentry;azureeventhub;telegram;lark;matrix;opsgenie;alertmanager;grafana;githubdispatch;githubpullrequestcomment;gitlabmergerequestcomment;pagerduty;datadog;nats;zulip;otel
	// +required
	Type string `json:"type"`

	// Interval is not used (Flux's v1beta3 deprecated it).
	//
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	// +deprecated
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Channel is the chat channel events are posted to, for the chat types that take one.
	// +kubebuilder:validation:MaxLength:=2048
	// +optional
	Channel string `json:"channel,omitempty"`

	// Username events are posted as, for the chat types that take one.
	// +kubebuilder:validation:MaxLength:=2048
	// +optional
	Username string `json:"username,omitempty"`

	// Address is where events are sent: the URL of a webhook, or the repository of a commit
	// status. The `address` key of spec.secretRef's Secret, when set, wins over it.
	// +kubebuilder:validation:MaxLength:=2048
	// +kubebuilder:validation:Optional
	// +optional
	Address string `json:"address,omitempty"`

	// Timeout of each request to the endpoint (15s when unset).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Proxy is the address of an HTTP proxy. Deprecated in Flux; not used by the gating-controller,
	// whose requests go straight to the addresses its policy allows.
	// +kubebuilder:validation:Pattern="^(http|https)://.*$"
	// +kubebuilder:validation:MaxLength:=2048
	// +kubebuilder:validation:Optional
	// +optional
	Proxy string `json:"proxy,omitempty"`

	// ProxySecretRef names a Secret with a proxy's address; not used by the gating-controller.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// SecretRef names a Secret of the Provider's namespace with its credentials: `address` (wins
	// over spec.address), `token`, `headers` (a YAML map of HTTP headers) for the generic types.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName is for cloud workload identity, which the gating-controller does not
	// have: a Provider that sets it is refused.
	//
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret with the CA (`ca.crt`) and client certificate (`tls.crt`,
	// `tls.key`) of the endpoint.
	//
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Suspend stops the sending of events until it is unset.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// CommitStatusExpr is a CEL expression for the description of a commit status.
	// +optional
	CommitStatusExpr string `json:"commitStatusExpr,omitempty"`
}

// +kubebuilder:storageversion
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"

// Provider is an endpoint Alerts send events to.
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderList is a list of Providers.
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provider{}, &ProviderList{})
}

// GetTimeout is the timeout of each request: spec.timeout, 15s when unset.
func (in *Provider) GetTimeout() time.Duration {
	if in.Spec.Timeout != nil {
		return in.Spec.Timeout.Duration
	}
	return 15 * time.Second
}
