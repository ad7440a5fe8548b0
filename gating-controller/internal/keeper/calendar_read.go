package keeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper/calendar"
)

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

// CalendarReader reads the calendars of keepers: ConfigMaps (and sources) from the API server,
// artifacts through the fetcher.
type CalendarReader struct {
	Client  client.Reader
	Fetcher *artifact.Fetcher
}

// compileKeeper compiles a keeper with its calendar, read from its ConfigMap or source, at now. A
// spec that does not parse is returned as is; a calendar that cannot be read as a CalendarError,
// whose message names the ConfigMap or source; any other error (the API server) as such. stale
// says so when the calendar is that of an earlier artifact of the source, the current one failing
// to download.
func CompileObject(ctx context.Context, rd CalendarReader, gk *gatingv1.GateKeeper, now time.Time) (k *Keeper, stale *Stale, err error) {
	if gk.Spec.Calendar == nil {
		k, err = Parse(gk.Spec)
		return k, nil, err
	}
	// The spec first: a broken schedule is reported before a missing calendar.
	if err := Validate(gk.Spec); err != nil {
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
	k, err = Compile(gk.Spec, cal, now)
	if err != nil {
		// The calendar parsed but cannot be expanded (its limits).
		return nil, nil, &CalendarError{err: err, retry: retryOfSource(gk)}
	}
	return k, stale, nil
}

// configMapCalendar reads the keeper's calendar from its ConfigMap.
func (rd CalendarReader) configMapCalendar(ctx context.Context, gk *gatingv1.GateKeeper) (*calendar.Calendar, error) {
	ref := gk.Spec.Calendar.ConfigMapRef
	where := fmt.Sprintf("spec.calendar.configMapRef: ConfigMap '%s' key '%s'", ref.Name, ref.Key)
	cm := &corev1.ConfigMap{}
	if err := rd.Client.Get(ctx, types.NamespacedName{Namespace: gk.Namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &CalendarError{err: fmt.Errorf("spec.calendar.configMapRef: ConfigMap '%s' not found", ref.Name)}
		}
		return nil, &TransientError{fmt.Errorf("reading the calendar's ConfigMap '%s': %w", ref.Name, err)}
	}
	if _, ok := cm.Data[ref.Key]; !ok {
		return nil, &CalendarError{err: fmt.Errorf("%s: no such key", where)}
	}
	cal, err := parsedCalendars.parse(cm, ref.Key, gk.Spec.TimeZone)
	if err != nil {
		return nil, &CalendarError{err: fmt.Errorf("%s: %w", where, err)}
	}
	return cal, nil
}

// retryOfSource: a keeper whose calendar is in a source looks again without an event, as the
// source's CRD may not be watched (not installed as the controller started).
func retryOfSource(gk *gatingv1.GateKeeper) time.Duration {
	if gk.Spec.Calendar != nil && gk.Spec.Calendar.SourceRef != nil {
		return CalendarRetry
	}
	return 0
}
