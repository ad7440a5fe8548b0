// Package controller holds the reconcilers of the gating-controller.
package controller

// Permissions every controller needs: leader election leases and events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
