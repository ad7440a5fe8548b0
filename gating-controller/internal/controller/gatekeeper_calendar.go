package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/calendar"
	"github.com/sluice-gitops/sluice/gating-controller/internal/schedule"
)

// The keepers read their calendars' ConfigMaps; the manager's client reads ConfigMaps straight
// from the API server (shared/bootstrap), and both controllers watch their metadata only.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

const (
	// CalendarFailedReason: the keeper's calendar cannot be read (a missing ConfigMap or key,
	// a missing source, artifact or file, a document that does not parse or exceeds the limits).
	CalendarFailedReason = "CalendarFailed"
	// gateKeeperConfigMapIndex indexes GateKeepers by the ConfigMap of their calendar.
	gateKeeperConfigMapIndex = "spec.calendar.configMapRef.name"
	// calendarRetry is how soon a keeper whose calendar cannot be read looks again, besides
	// the watch on its ConfigMap or source.
	calendarRetry = 5 * time.Minute
	// calendarRefresh is how often a keeper with a calendar is evaluated at least: its
	// calendar is expanded over the horizon from the last evaluation only.
	calendarRefresh = 24 * time.Hour
)

// calendarError is a calendar that cannot be read: the keeper is not stalled, as the ConfigMap
// or source may appear or be fixed without a change of the keeper.
type calendarError struct {
	err error
	// retry is how soon the gate looks again, for what no watch reports (a failed download);
	// zero when the watch on a ConfigMap does. The keeper looks again after calendarRetry at
	// the latest.
	retry time.Duration
}

func (e *calendarError) Error() string { return e.err.Error() }
func (e *calendarError) Unwrap() error { return e.err }

// keeperCalendarRetry is how soon a gate looks again at its keeper's calendar that failed with
// err, zero when a watch reports its fix.
func keeperCalendarRetry(err error) time.Duration {
	var ce *calendarError
	if errors.As(err, &ce) {
		return ce.retry
	}
	return 0
}

// soonest is the shortest of the positive durations, zero when there is none.
func soonest(ds ...time.Duration) time.Duration {
	var out time.Duration
	for _, d := range ds {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// calendarRetryOf is how soon a keeper looks again at a calendar that failed with err.
func calendarRetryOf(err error) time.Duration {
	var ce *calendarError
	if errors.As(err, &ce) && ce.retry > 0 && ce.retry < calendarRetry {
		return ce.retry
	}
	return calendarRetry
}

// transientError is a failure to read the calendar's ConfigMap from the API server: retried,
// never taken for a broken keeper.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func isTransient(err error) bool {
	var te *transientError
	return errors.As(err, &te)
}

// isCalendarError: the keeper cannot be evaluated because of its calendar, not its spec.
func isCalendarError(err error) bool {
	var ce *calendarError
	return errors.As(err, &ce)
}

// parsedCalendars keeps the last parse of each calendar ConfigMap key, by resource version, so a
// gate and its keepers do not parse the same document at every reconcile.
var parsedCalendars = &calendarCache{entries: map[string]calendarEntry{}}

type calendarCache struct {
	mu      sync.Mutex
	entries map[string]calendarEntry
}

type calendarEntry struct {
	version string
	cal     *calendar.Calendar
	err     error
}

func (c *calendarCache) parse(cm *corev1.ConfigMap, key, tz string) (*calendar.Calendar, error) {
	id := cm.Namespace + "/" + cm.Name + "/" + key + "/" + tz
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok && e.version == cm.ResourceVersion && cm.ResourceVersion != "" {
		return e.cal, e.err
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, err // reported by the spec's own check
		}
		loc = l
	}
	cal, err := calendar.Parse([]byte(cm.Data[key]), loc)
	c.entries[id] = calendarEntry{version: cm.ResourceVersion, cal: cal, err: err}
	return cal, err
}

// calendarReader reads the calendars of keepers: ConfigMaps (and sources) from the API server,
// artifacts through the fetcher.
type calendarReader struct {
	client  client.Reader
	fetcher *artifact.Fetcher
}

// compileKeeper compiles a keeper with its calendar, read from its ConfigMap or source, at now. A
// spec that does not parse is returned as is; a calendar that cannot be read as a calendarError,
// whose message names the ConfigMap or source; any other error (the API server) as such. stale
// says so when the calendar is that of an earlier artifact of the source, the current one failing
// to download.
func compileKeeper(ctx context.Context, rd calendarReader, gk *gatingv1.GateKeeper, now time.Time) (k *schedule.Keeper, stale *staleCalendar, err error) {
	if gk.Spec.Calendar == nil {
		k, err = schedule.Parse(gk.Spec)
		return k, nil, err
	}
	// The rest of the spec first: a broken schedule is reported before a missing calendar.
	probe := gk.Spec
	probe.Calendar = nil
	if _, err := schedule.Parse(probe); err != nil {
		return nil, nil, err
	}
	var cal *calendar.Calendar
	switch c := gk.Spec.Calendar; {
	case c.SourceRef != nil:
		cal, stale, err = rd.sourceCalendar(ctx, gk)
	case c.ConfigMapRef != nil:
		cal, err = rd.configMapCalendar(ctx, gk)
	default:
		// Admission refuses it; a spec nobody can retry.
		return nil, nil, errors.New("spec.calendar: one of configMapRef and sourceRef is required")
	}
	if err != nil {
		return nil, nil, err
	}
	k, err = schedule.Compile(gk.Spec, cal, now)
	if err != nil {
		// The calendar parsed but cannot be expanded (its limits).
		return nil, nil, &calendarError{err: err, retry: retryOfSource(gk)}
	}
	return k, stale, nil
}

// configMapCalendar reads the keeper's calendar from its ConfigMap.
func (rd calendarReader) configMapCalendar(ctx context.Context, gk *gatingv1.GateKeeper) (*calendar.Calendar, error) {
	ref := gk.Spec.Calendar.ConfigMapRef
	where := fmt.Sprintf("spec.calendar.configMapRef: ConfigMap '%s' key '%s'", ref.Name, ref.Key)
	cm := &corev1.ConfigMap{}
	if err := rd.client.Get(ctx, types.NamespacedName{Namespace: gk.Namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &calendarError{err: fmt.Errorf("spec.calendar.configMapRef: ConfigMap '%s' not found", ref.Name)}
		}
		return nil, &transientError{fmt.Errorf("reading the calendar's ConfigMap '%s': %w", ref.Name, err)}
	}
	if _, ok := cm.Data[ref.Key]; !ok {
		return nil, &calendarError{err: fmt.Errorf("%s: no such key", where)}
	}
	cal, err := parsedCalendars.parse(cm, ref.Key, gk.Spec.TimeZone)
	if err != nil {
		return nil, &calendarError{err: fmt.Errorf("%s: %w", where, err)}
	}
	return cal, nil
}

// retryOfSource: a keeper whose calendar is in a source looks again without an event, as the
// source's CRD may not be watched (not installed as the controller started).
func retryOfSource(gk *gatingv1.GateKeeper) time.Duration {
	if gk.Spec.Calendar != nil && gk.Spec.Calendar.SourceRef != nil {
		return calendarRetry
	}
	return 0
}

// readerOr is r, or c when r is nil.
func readerOr(r client.Reader, c client.Reader) client.Reader {
	if r == nil {
		return c
	}
	return r
}

// calendarConfigMap is the name of the keeper's calendar ConfigMap, for the index.
func calendarConfigMap(o client.Object) []string {
	gk, ok := o.(*gatingv1.GateKeeper)
	if !ok || gk.Spec.Calendar == nil || gk.Spec.Calendar.ConfigMapRef == nil {
		return nil
	}
	return []string{gk.Spec.Calendar.ConfigMapRef.Name}
}

// keepersOfConfigMap lists the keepers whose calendar is in the ConfigMap.
func keepersOfConfigMap(ctx context.Context, c client.Reader, o client.Object) []gatingv1.GateKeeper {
	list := &gatingv1.GateKeeperList{}
	if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{gateKeeperConfigMapIndex: o.GetName()}); err != nil {
		return nil
	}
	return list.Items
}

// keepersOfCalendar maps a ConfigMap to the keepers that read it.
func (r *GateKeeperReconciler) keepersOfCalendar(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, gk := range keepersOfConfigMap(ctx, r.Client, o) {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&gk)})
	}
	return reqs
}

// gatesOfCalendar maps a ConfigMap to the gates kept by keepers that read it.
func (r *GateReconciler) gatesOfCalendar(ctx context.Context, o client.Object) []reconcile.Request {
	return keptGates(keepersOfConfigMap(ctx, r.Client, o))
}

// keptGates are the gates the keepers keep, each once.
func keptGates(keepers []gatingv1.GateKeeper) []reconcile.Request {
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for _, gk := range keepers {
		if !seen[gk.Spec.Gate] {
			seen[gk.Spec.Gate] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gk.Namespace, Name: gk.Spec.Gate}})
		}
	}
	return reqs
}

// configMapMetadata is the metadata-only form of ConfigMaps the controllers watch.
func configMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}
