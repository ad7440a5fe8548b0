package main

import (
	"context"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// gatedKinds are the kinds whose objects can wait behind gates (`spec.gates`). They are read as
// unstructured objects, so that the plugin does not depend on their Go types, and a kind whose
// CRD is not installed is only skipped.
var gatedKinds = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"GitRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}},
	{"HelmRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}},
	{"HelmChart", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}},
	{"OCIRepository", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}},
	{"Bucket", schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "buckets"}},
	{"ResourceSet", schema.GroupVersionResource{Group: "fluxcd.controlplane.io", Version: "v1", Resource: "resourcesets"}},
	{"ManifestGeneration", schema.GroupVersionResource{Group: "generator.toolkit.fluxcd.io", Version: "v1alpha1", Resource: "manifestgenerations"}},
	{"ManifestUpdate", schema.GroupVersionResource{Group: "generator.toolkit.fluxcd.io", Version: "v1alpha1", Resource: "manifestupdates"}},
}

// uiWaiting is an object that waits on a gate, with what its status.gates says
// (gatesapi.GatesStatus; empty where its controller does not report it).
type uiWaiting struct {
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	State           string `json:"state"`
	HeldSince       string `json:"heldSince"`
	WaitingRevision string `json:"waitingRevision"`
}

// waiting lists the objects of the gated kinds by the gates their spec.gates.refs name. A gate of
// the namespace shown can be named from another namespace (`namespace/name`): those objects are
// listed with -A only, since the user may not read other namespaces.
func (d *dashboard) waiting(ctx context.Context) (map[types.NamespacedName][]uiWaiting, []uiSkipped) {
	byGate := map[types.NamespacedName][]uiWaiting{}
	var skipped []uiSkipped
	for _, k := range gatedKinds {
		list, err := d.dynamic.Resource(k.gvr).Namespace(d.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			skipped = append(skipped, uiSkipped{Kind: k.kind, Reason: skipReason(err)})
			continue
		}
		for i := range list.Items {
			obj := &list.Items[i]
			refs, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "gates", "refs")
			if len(refs) == 0 {
				continue
			}
			w := waitingOf(k.kind, obj)
			for _, ref := range refs {
				key := gatesapi.ResolveRef(obj.GetNamespace(), ref)
				byGate[key] = append(byGate[key], w)
			}
		}
	}
	for _, ws := range byGate {
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
	return byGate, skipped
}

// waitingOf reads status.gates, the contract of gatesapi.GatesStatus, leniently: a field that is
// missing or of another type shows as "-" rather than failing the page.
func waitingOf(kind string, obj *unstructured.Unstructured) uiWaiting {
	field := func(name string) string {
		v, _, _ := unstructured.NestedString(obj.Object, "status", "gates", name)
		return v
	}
	return uiWaiting{
		Kind:            kind,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		State:           orDash(field("state")),
		HeldSince:       orDash(field("heldSince")),
		WaitingRevision: orDash(field("waitingRevision")),
	}
}
