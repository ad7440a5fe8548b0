package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// BucketKind is the kind of Bucket objects.
const BucketKind = "Bucket"

// Providers of a Bucket. Only generic, and aws with static keys, are served: the others need
// a cloud identity (docs/bucket.md).
const (
	// BucketProviderGeneric is any S3-compatible object storage, reached with static keys or
	// anonymously.
	BucketProviderGeneric = "generic"
	// BucketProviderAmazon is AWS S3.
	BucketProviderAmazon = "aws"
	// BucketProviderGoogle is Google Cloud Storage.
	BucketProviderGoogle = "gcp"
	// BucketProviderAzure is Azure Blob Storage.
	BucketProviderAzure = "azure"
)

// Reasons of a Bucket, as in Flux's Bucket API.
const (
	// BucketOperationSucceededReason: the objects were listed and fetched.
	BucketOperationSucceededReason = "BucketOperationSucceeded"
	// BucketOperationFailedReason: listing or fetching the objects failed.
	BucketOperationFailedReason = "BucketOperationFailed"
	// CloudIdentityUnsupportedReason: the Bucket needs a cloud identity (gcp, azure, aws without
	// static keys, spec.sts, spec.serviceAccountName), which this controller does not support.
	CloudIdentityUnsupportedReason = "CloudIdentityUnsupported"
)

// BucketSpec says which bucket to fetch, how and how often.
// +kubebuilder:validation:XValidation:rule="self.provider == 'aws' || self.provider == 'generic' || !has(self.sts)",message="spec.sts is only supported for the 'aws' and 'generic' providers"
// +kubebuilder:validation:XValidation:rule="self.provider != 'aws' || !has(self.sts) || self.sts.provider == 'aws'",message="the 'aws' provider only supports the 'aws' STS provider"
// +kubebuilder:validation:XValidation:rule="self.provider != 'generic' || !has(self.sts) || self.sts.provider == 'ldap'",message="the 'generic' provider only supports the 'ldap' STS provider"
// +kubebuilder:validation:XValidation:rule="!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.secretRef)",message="spec.sts.secretRef is not used by the 'aws' STS provider"
// +kubebuilder:validation:XValidation:rule="!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.certSecretRef)",message="spec.sts.certSecretRef is not used by the 'aws' STS provider"
// +kubebuilder:validation:XValidation:rule="self.provider != 'generic' || !has(self.serviceAccountName)",message="spec.serviceAccountName is not supported for the 'generic' provider"
// +kubebuilder:validation:XValidation:rule="!has(self.secretRef) || !has(self.serviceAccountName)",message="spec.secretRef and spec.serviceAccountName are mutually exclusive"
type BucketSpec struct {
	// Provider of the object storage: generic (default, any S3-compatible storage), aws, gcp
	// or azure.
	// +kubebuilder:validation:Enum=generic;aws;gcp;azure
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`
	// BucketName is the name of the bucket.
	// +required
	BucketName string `json:"bucketName"`
	// Endpoint is the host[:port] of the object storage.
	// +required
	Endpoint string `json:"endpoint"`
	// STS configures a Security Token Service that issues temporary credentials (aws and
	// generic providers).
	// +optional
	STS *BucketSTSSpec `json:"sts,omitempty"`
	// Insecure allows plain HTTP to the endpoint.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// Region of the endpoint.
	// +optional
	Region string `json:"region,omitempty"`
	// Prefix limits the objects to those whose key starts with it (listed by the server).
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// SecretRef names a Secret with the static keys `accesskey` and `secretkey`.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
	// ServiceAccountName is the Kubernetes ServiceAccount whose cloud identity reaches the
	// bucket (aws and gcp providers).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// CertSecretRef names a Secret with the TLS settings of the endpoint: `ca.crt` to trust,
	// and `tls.crt` with `tls.key` for a client certificate (generic provider). Of type Opaque or
	// kubernetes.io/tls.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`
	// ProxySecretRef names a Secret with the proxy to reach the endpoint through: `address`,
	// and optionally `username` and `password`.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`
	// Interval at which the bucket is checked.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`
	// Timeout of the fetch operations (default 60s).
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Ignore adds .gitignore-style patterns to those of the bucket's `.sourceignore` object.
	// +optional
	Ignore *string `json:"ignore,omitempty"`
	// Suspend stops the reconciliation of this source.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Gates hold the source on its last artifact while they are closed.
	// +optional
	Gates *gatesapi.Gates `json:"gates,omitempty"`
}

// BucketSTSSpec is a Security Token Service that issues temporary credentials.
type BucketSTSSpec struct {
	// Provider of the STS: aws or ldap.
	// +kubebuilder:validation:Enum=aws;ldap
	// +required
	Provider string `json:"provider"`
	// Endpoint is the http(s) URL of the STS.
	// +kubebuilder:validation:Pattern="^(http|https)://.*$"
	// +required
	Endpoint string `json:"endpoint"`
	// SecretRef names a Secret with the `username` and `password` of the ldap provider.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
	// CertSecretRef names a Secret with the TLS settings of the STS endpoint (`ca.crt`,
	// `tls.crt`, `tls.key`; ldap provider).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`
}

// BucketStatus is the observed state of a Bucket.
type BucketStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// URL is the stable URL of the artifact: .../latest.tar.gz.
	// +optional
	URL string `json:"url,omitempty"`
	// Artifact is the stored artifact; its revision is the digest of the index of object keys
	// and ETags.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`
	// ObservedIgnore is the spec.ignore of the artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// Gates says whether the object's gates hold it, and what waits behind them; absent when
	// the object has no gates.
	// +optional
	Gates *gatesapi.GatesStatus `json:"gates,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Bucket fetches the objects of an S3-compatible bucket and serves them as an artifact.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Gates",type="string",JSONPath=".status.gates.state"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Shard",type="string",JSONPath=`.metadata.labels.sharding\.sluice\.dev/shard`,priority=1
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BucketSpec   `json:"spec,omitempty"`
	Status BucketStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Bucket) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the status conditions.
func (in *Bucket) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetGates implements gatesapi.Gated.
func (in *Bucket) GetGates() *gatesapi.Gates { return in.Spec.Gates }

// GetGatesStatus returns the status of the object's gates.
func (in *Bucket) GetGatesStatus() *gatesapi.GatesStatus { return in.Status.Gates }

// SetGatesStatus sets the status of the object's gates.
func (in *Bucket) SetGatesStatus(st *gatesapi.GatesStatus) { in.Status.Gates = st }

// GetArtifact returns the stored artifact.
func (in *Bucket) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// SetArtifact sets the stored artifact.
func (in *Bucket) SetArtifact(a *meta.Artifact) { in.Status.Artifact = a }

// GetRequestStatus returns the reconcile request handling of the status.
func (in *Bucket) GetRequestStatus() *meta.ReconcileRequestStatus {
	return &in.Status.ReconcileRequestStatus
}

// BucketList is a list of Buckets.
// +kubebuilder:object:root=true
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bucket{}, &BucketList{})
}
