package gatesapi

// Requirement says how many of the referenced gates must be opened.
// +kubebuilder:validation:Enum=all;oneOf
type Requirement string

const (
	// RequireAll lets the object go ahead only when every gate is opened.
	RequireAll Requirement = "all"
	// RequireOneOf lets the object go ahead when at least one gate is opened.
	RequireOneOf Requirement = "oneOf"
)

// Gates is the spec field an object embeds as `spec.gates` to wait on Gate objects.
type Gates struct {
	// Require is `all` (default): every gate must be opened, or `oneOf`: at least one must be.
	// +kubebuilder:default=all
	// +optional
	Require Requirement `json:"require,omitempty"`

	// Refs names the gates, as `name` (in the object's namespace) or `namespace/name`.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Refs []string `json:"refs,omitempty"`
}

// Requirement returns the requirement with its default applied.
func (g *Gates) Requirement() Requirement {
	if g == nil || g.Require == "" {
		return RequireAll
	}
	return g.Require
}
