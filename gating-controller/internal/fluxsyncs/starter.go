package fluxsyncs

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Starter starts holding a Flux kind once its CRD is established and serves the version of
// Kinds: Flux may be installed before or after the gating-controller, and a cluster without
// HelmReleases holds the other kinds all the same. The CRDs are watched by name, metadata only;
// the first list of the watch finds those that exist at start.
type Starter struct {
	Manager ctrl.Manager
	// New returns the reconciler of a kind.
	New     func(Kind) *Reconciler
	Options controller.Options

	mu      sync.Mutex
	started map[string]bool
}

// SetupWithManager registers the watch on the CRDs of Kinds.
func (s *Starter) SetupWithManager(mgr ctrl.Manager) error {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(crdGVK)
	return ctrl.NewControllerManagedBy(mgr).
		Named("flux-crds").
		For(crd, builder.OnlyMetadata, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, ok := kindOfCRD(o.GetName())
			return ok
		}), predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }})).
		WithOptions(controller.Options{SkipNameValidation: s.Options.SkipNameValidation}).
		Complete(s)
}

// Reconcile starts the kind of an established CRD, once.
func (s *Starter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kind, ok := kindOfCRD(req.Name)
	if !ok {
		return ctrl.Result{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started[kind.CRD] {
		return ctrl.Result{}, nil
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := s.Manager.GetAPIReader().Get(ctx, client.ObjectKey{Name: req.Name}, crd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !serves(crd, kind.GVK.Version) {
		// Established comes a moment after creation, as an update: that event brings it back.
		log.FromContext(ctx).Info("CRD not established or not serving the version held", "crd", req.Name, "version", kind.GVK.Version)
		return ctrl.Result{}, nil
	}
	if err := s.New(kind).SetupWithManager(ctx, s.Manager, s.Options); err != nil {
		return ctrl.Result{}, fmt.Errorf("holding %s behind gates: %w", kind.GVK.Kind, err)
	}
	if s.started == nil {
		s.started = map[string]bool{}
	}
	s.started[kind.CRD] = true
	log.FromContext(ctx).Info("holding behind gates", "kind", kind.GVK.String())
	return ctrl.Result{}, nil
}

func kindOfCRD(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.CRD == name {
			return k, true
		}
	}
	return Kind{}, false
}

// serves says whether the CRD is Established and serves version.
func serves(crd *unstructured.Unstructured, version string) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	established := false
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["name"] == version && m["served"] == true {
			return true
		}
	}
	return false
}
