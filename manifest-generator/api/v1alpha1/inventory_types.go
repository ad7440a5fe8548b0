package v1alpha1

// ResourceInventory is the list of the objects a ManifestGeneration applied. It has the shape of
// the ResourceSet inventory (and of Flux's kustomize-controller).
type ResourceInventory struct {
	// Entries of the inventory, one per applied object.
	// +optional
	Entries []ResourceRef `json:"entries"`
}

// ResourceRef is one object of the inventory.
type ResourceRef struct {
	// ID is `<namespace>_<name>_<group>_<kind>`.
	ID string `json:"id"`
	// Version is the API version of the object's kind.
	Version string `json:"v"`
}
