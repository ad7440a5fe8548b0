package main

import (
	"context"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sluice-gitops/sluice/shared/fluxapi"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// gatedKind is a kind whose objects can wait behind gates. Its objects are read as unstructured
// objects, so that the plugin does not depend on their Go types, and a kind whose CRD is not
// installed is only skipped.
type gatedKind struct {
	kind string
	gvr  schema.GroupVersionResource
	// annotated kinds (Flux's own syncs) have no spec.gates: gatesapi.GatesAnnotation binds them,
	// and the gating-controller reports in their annotations what status.gates says elsewhere.
	annotated bool
}

var gatedKinds = []gatedKind{
	gated(fluxapi.GitRepository, false), gated(fluxapi.HelmRepository, false), gated(fluxapi.HelmChart, false),
	gated(fluxapi.OCIRepository, false), gated(fluxapi.Bucket, false),
	gated(fluxapi.ResourceSet, false), gated(fluxapi.ResourceSetInputProvider, false),
	gated(fluxapi.ManifestGeneration, false), gated(fluxapi.ManifestUpdate, false),
	gated(fluxapi.Kustomization, true), gated(fluxapi.HelmRelease, true), gated(fluxapi.ImageUpdateAutomation, true),
}

func gated(gvk schema.GroupVersionKind, annotated bool) gatedKind {
	return gatedKind{kind: gvk.Kind, gvr: fluxapi.Resource(gvk), annotated: annotated}
}

// waitingObject is an object that waits on a gate, with what its controller reports of its gates
// (gatesapi.GatesStatus; "-" where it reports nothing).
type waitingObject struct {
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	State           string `json:"state"`
	HeldSince       string `json:"heldSince"`
	WaitingRevision string `json:"waitingRevision"`
}

// skippedKind is a kind that could not be listed, and why.
type skippedKind struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	// notInstalled: the kind's CRD is not installed, so no object of it is missing from a list.
	notInstalled bool
}

// waitingList is what listWaiting found.
type waitingList struct {
	// byGate are the objects by the gate they wait on, sorted by namespace, kind and name.
	byGate map[types.NamespacedName][]waitingObject
	// skipped are the kinds that could not be listed at all.
	skipped []skippedKind
	// narrowed are the kinds listed in the fallback namespace only.
	narrowed []string
	// deletions are the deletion sets waiting on each gate's approvers.
	deletions map[types.NamespacedName][]uiDeletion
}

// listWaiting lists the objects of the gated kinds in namespace (all namespaces when empty) by the
// gates they name. With a fallback namespace, a kind the user may not list in all namespaces is
// listed in that namespace only, and named in narrowed: objects of other namespaces can name a
// gate as `namespace/name`, but the user's RBAC may end at their own namespace.
func listWaiting(ctx context.Context, dyn dynamic.Interface, namespace, fallback string) waitingList {
	found := waitingList{byGate: map[types.NamespacedName][]waitingObject{}, deletions: map[types.NamespacedName][]uiDeletion{}}
	for _, k := range gatedKinds {
		list, err := dyn.Resource(k.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil && fallback != "" && namespace == "" && apierrors.IsForbidden(err) {
			list, err = dyn.Resource(k.gvr).Namespace(fallback).List(ctx, metav1.ListOptions{})
			if err == nil {
				found.narrowed = append(found.narrowed, k.kind)
			}
		}
		if err != nil {
			found.skipped = append(found.skipped, skippedKind{Kind: k.kind, Reason: skipReason(err),
				notInstalled: apierrors.IsNotFound(err)})
			continue
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if key, d, ok := deletionOf(k.kind, obj); ok {
				found.deletions[key] = append(found.deletions[key], d)
			}
			refs, w := gatesOf(k, obj)
			// An object naming one gate twice ("gate" and "<its namespace>/gate") waits on it once.
			seen := map[types.NamespacedName]bool{}
			for _, ref := range refs {
				key := gatesapi.ResolveRef(obj.GetNamespace(), ref)
				if !seen[key] {
					seen[key] = true
					found.byGate[key] = append(found.byGate[key], w)
				}
			}
		}
	}
	for _, ws := range found.byGate {
		sort.SliceStable(ws, func(i, j int) bool {
			a, b := ws[i], ws[j]
			if a.Namespace != b.Namespace {
				return a.Namespace < b.Namespace
			}
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			return a.Name < b.Name
		})
	}
	return found
}

// gatesOf reads the gate refs of an object of kind k, and what it reports of them.
func gatesOf(k gatedKind, obj *unstructured.Unstructured) ([]string, waitingObject) {
	if !k.annotated {
		refs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "gates", "refs")
		return refs, waitingOf(k.kind, obj)
	}
	value, bound := obj.GetAnnotations()[gatesapi.GatesAnnotation]
	if !bound {
		return nil, waitingObject{}
	}
	gates, err := gatesapi.ParseGatesAnnotation(value)
	if err != nil {
		// A malformed value names no gate that can be trusted: the object is held by the
		// gating-controller, but the page of a gate cannot say it waits on that gate. Its events
		// and Approved condition say what is wrong.
		return nil, waitingObject{}
	}
	return gates.Refs, heldOf(k.kind, obj)
}

// waitingOf reads status.gates, the contract of gatesapi.GatesStatus, leniently: a field that is
// missing or of another type shows as "-" rather than failing the page.
func waitingOf(kind string, obj *unstructured.Unstructured) waitingObject {
	field := func(name string) string {
		v, _, _ := unstructured.NestedString(obj.Object, "status", "gates", name)
		return v
	}
	return waitingObject{
		Kind:            kind,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		State:           orDash(field("state")),
		HeldSince:       orDash(field("heldSince")),
		WaitingRevision: orDash(field("waitingRevision")),
	}
}

// heldOf reads the held annotations of an object bound by gatesapi.GatesAnnotation, as
// gatesapi.HeldStatus reads them.
func heldOf(kind string, obj *unstructured.Unstructured) waitingObject {
	w := waitingObject{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), State: "-", HeldSince: "-", WaitingRevision: "-"}
	st := gatesapi.HeldStatus(obj.GetAnnotations())
	if st == nil {
		return w
	}
	w.State = orDash(st.State)
	w.HeldSince = timeOrDash(st.HeldSince)
	w.WaitingRevision = orDash(st.WaitingRevision)
	return w
}

// skipReason says in a few words why a kind could not be listed.
func skipReason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: your RBAC does not let you list them"
	case apierrors.IsNotFound(err):
		return "not installed in the cluster"
	default:
		return err.Error()
	}
}
