package fluxreceiver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxreceiver/routing"
)

// target is an object a request asks to reconcile.
type target struct {
	kind string
	key  types.NamespacedName
}

// name names the target as events and logs do: Kind/name, with the namespace when it is not
// the Receiver's.
func (t target) name(receiverNamespace string) string {
	if t.key.Namespace == receiverNamespace {
		return t.kind + "/" + t.key.Name
	}
	return t.kind + "/" + t.key.Namespace + "/" + t.key.Name
}

// outcome is what a request did: the objects asked to reconcile, those a push did not concern,
// those a filter left out, and the errors met on the way.
type outcome struct {
	requested []target
	unrouted  int
	filtered  int
	errs      []error
	// evalFailed counts the errors of errs that are filters failing on the request's body:
	// sending the same body again cannot help.
	evalFailed int
}

// selection is what decides which objects a request asks to reconcile.
type selection struct {
	receiver *notificationv1.Receiver
	// push routes the GitRepositories; nil asks them all, as Flux does.
	push *routing.Push
	// req is the request's JSON body as the filters read it.
	req map[string]any
	// allowCrossNamespace lets an entry name another namespace than the Receiver's.
	allowCrossNamespace bool
}

// requestReconciliations asks every object the Receiver selects to reconcile, by writing
// reconcile.fluxcd.io/requestedAt, once per object however many entries select it.
func requestReconciliations(ctx context.Context, c client.Client, sel selection, now time.Time) outcome {
	var out outcome
	top, err := compileFilter(sel.receiver.Spec.ResourceFilter)
	if err != nil {
		out.errs = append(out.errs, err)
		return out
	}
	// The filters of one request share one deadline; the reads and patches have the request's.
	filterCtx, cancel := context.WithTimeout(ctx, filterTimeout)
	defer cancel()
	done := map[target]bool{}
	for _, entry := range sel.receiver.Spec.Resources {
		objs, err := selectObjects(ctx, c, sel, entry.CrossNamespaceObjectReference)
		if err != nil {
			out.errs = append(out.errs, err)
			continue
		}
		own, err := compileFilter(entry.Filter)
		if err != nil {
			out.errs = append(out.errs, err)
			continue
		}
		for _, obj := range objs {
			t := target{kind: obj.GetKind(), key: client.ObjectKeyFromObject(obj)}
			if done[t] {
				continue
			}
			if sel.push != nil && obj.GroupVersionKind().GroupKind() == gitRepository && !routing.Follows(obj, sel.push) {
				out.unrouted++
				continue
			}
			accepted, err := acceptedBy(filterCtx, obj, sel.req, top, own)
			if err != nil {
				out.errs = append(out.errs, fmt.Errorf("%s: %w", t.name(sel.receiver.Namespace), err))
				out.evalFailed++
				continue
			}
			if !accepted {
				out.filtered++
				continue
			}
			if err := annotate(ctx, c, obj, now); err != nil {
				out.errs = append(out.errs, fmt.Errorf("asking %s to reconcile: %w", t.name(sel.receiver.Namespace), err))
				continue
			}
			done[t] = true
			out.requested = append(out.requested, t)
		}
	}
	return out
}

// selectObjects reads the objects of one entry of spec.resources: the named one, or with name
// `*` every one of the kind in the namespace that carries matchLabels (all of them without
// labels; Flux requires labels with `*`). Reads are not cached: the controller watches none of
// these kinds.
func selectObjects(ctx context.Context, c client.Reader, sel selection, ref notificationv1.CrossNamespaceObjectReference) ([]*unstructured.Unstructured, error) {
	ns := sel.receiver.Namespace
	if ref.Namespace != "" && ref.Namespace != ns {
		if !sel.allowCrossNamespace {
			return nil, fmt.Errorf("%s/%s/%s is in another namespace than the Receiver: cross-namespace references are not allowed",
				ref.Kind, ref.Namespace, ref.Name)
		}
		ns = ref.Namespace
	}
	gvk, err := gvkOf(ref)
	if err != nil {
		return nil, err
	}
	if ref.Name != "*" {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj); err != nil {
			return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		return []*unstructured.Unstructured{obj}, nil
	}
	items := &unstructured.UnstructuredList{}
	items.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, items, client.InNamespace(ns), client.MatchingLabels(ref.MatchLabels)); err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", ref.Kind, ns, err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(items.Items))
	for i := range items.Items {
		objs = append(objs, &items.Items[i])
	}
	return objs, nil
}

// acceptedBy evaluates the filters for one object, which they see as Flux shows it: its
// apiVersion, kind and metadata (res), with the request's body (req).
func acceptedBy(ctx context.Context, obj *unstructured.Unstructured, req map[string]any, filters ...*filter) (bool, error) {
	res := map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "metadata": obj.Object["metadata"]}
	for _, f := range filters {
		ok, err := f.accepts(ctx, res, req)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// annotate writes reconcile.fluxcd.io/requestedAt on obj with a merge patch, which touches
// nothing else. The time has nanoseconds, so that two requests within a second are two requests.
func annotate(ctx context.Context, c client.Writer, obj *unstructured.Unstructured, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		meta.ReconcileRequestAnnotation: now.UTC().Format(time.RFC3339Nano),
	}}})
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(obj.GroupVersionKind())
	target.SetNamespace(obj.GetNamespace())
	target.SetName(obj.GetName())
	return c.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))
}
