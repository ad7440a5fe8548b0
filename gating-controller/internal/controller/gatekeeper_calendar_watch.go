package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// gateKeeperSourceIndex indexes GateKeepers by the source of their calendar, as "Kind/name".
const gateKeeperSourceIndex = "spec.calendar.sourceRef"

// calendarSourceKinds are the kinds spec.calendar.sourceRef may name.
var calendarSourceKinds = []string{
	gatingv1.GitRepositoryKind, gatingv1.OCIRepositoryKind, gatingv1.BucketKind, gatingv1.ExternalArtifactKind,
}

// calendarSource is the "Kind/name" of the keeper's calendar source, for the index.
func calendarSource(o client.Object) []string {
	gk, ok := o.(*gatingv1.GateKeeper)
	if !ok || gk.Spec.Calendar == nil || gk.Spec.Calendar.SourceRef == nil {
		return nil
	}
	return []string{gk.Spec.Calendar.SourceRef.Kind + "/" + gk.Spec.Calendar.SourceRef.Name}
}

// watchedSources are the source kinds a controller watches.
type watchedSources map[string]bool

// retry is how soon a keeper's calendar is read again for want of a watch on its source: a kind
// not watched is read every keeper.CalendarRetry, so that a new artifact is not left for a day.
func (w watchedSources) retry(gk *gatingv1.GateKeeper) time.Duration {
	if c := gk.Spec.Calendar; c != nil && c.SourceRef != nil && !w[c.SourceRef.Kind] {
		return keeper.CalendarRetry
	}
	return 0
}

// watchCalendarSources makes b watch, by their metadata only, the source kinds whose CRD the API
// server serves as the controller starts, mapping a change of one to what toRequests returns for
// the keepers that read it, and returns the kinds it watches. A kind installed later is not
// watched until a restart: its keepers look again every keeper.CalendarRetry (watchedSources.retry).
// logMissing logs the kinds left out (once per process).
func watchCalendarSources(b *builder.Builder, mgr ctrl.Manager, logMissing bool,
	toRequests func(keepers []gatingv1.GateKeeper) []reconcile.Request) (*builder.Builder, watchedSources) {
	c := mgr.GetClient()
	watched := watchedSources{}
	for _, kind := range calendarSourceKinds {
		gvk := schema.FromAPIVersionAndKind(fluxapi.SourceV1.String(), kind)
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if logMissing {
				ctrl.Log.WithName(ControllerName).Info("the CRD of " + kind + " is not installed: GateKeepers whose calendar is in one read it at their retry, not when it changes")
			}
			continue
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		b = b.WatchesMetadata(m, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return toRequests(keepersOfSource(ctx, c, kind, o))
		}))
		watched[kind] = true
	}
	return b, watched
}

// keepersOfSource lists the keepers whose calendar is in the source o of kind.
func keepersOfSource(ctx context.Context, c client.Reader, kind string, o client.Object) []gatingv1.GateKeeper {
	list := &gatingv1.GateKeeperList{}
	if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gateKeeperSourceIndex: kind + "/" + o.GetName()}); err != nil {
		return nil
	}
	return list.Items
}

// keeperRequests are reconcile requests for the keepers.
func keeperRequests(keepers []gatingv1.GateKeeper) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(keepers))
	for _, gk := range keepers {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gk)})
	}
	return reqs
}
