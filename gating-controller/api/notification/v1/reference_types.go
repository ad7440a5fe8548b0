package v1

// CrossNamespaceObjectReference selects the objects of one kind that a Receiver asks to
// reconcile: one by name, or every one (`*`) matching the labels.
type CrossNamespaceObjectReference struct {
	// APIVersion of the objects; each kind has a default (docs/flux-receiver.md).
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the objects: Flux's kinds, and Sluice's ManifestGeneration, ResourceSet and
	// ResourceSetInputProvider.
	// +kubebuilder:validation:Enum=Bucket;GitRepository;Kustomization;HelmRelease;HelmChart;HelmRepository;ImageRepository;ImagePolicy;ImageUpdateAutomation;OCIRepository;ArtifactGenerator;ExternalArtifact;ManifestGeneration;ResourceSet;ResourceSetInputProvider
	// +required
	Kind string `json:"kind"`

	// Name of the object, or `*` for every object of the kind (that matches MatchLabels).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the objects (default: the Receiver's). Another namespace is refused unless
	// the controller runs with --webhook-receiver-allow-cross-namespace-refs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Optional
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// MatchLabels selects, with name `*`, the objects carrying all of these labels.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}
