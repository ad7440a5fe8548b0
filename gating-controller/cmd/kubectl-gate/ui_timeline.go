package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/gatestate"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper/calendar"
)

const (
	// timelineDays is how far ahead the page shows openings and closings.
	timelineDays = 14
	// maxKeeperTransitions bounds the changes taken from one keeper, so that a schedule that
	// changes every minute makes a short note rather than a page of thousands of lines.
	maxKeeperTransitions = 200
)

// uiTransition is one opening or closing of a gate in the coming days.
type uiTransition struct {
	At    string `json:"at"`    // UTC, RFC 3339
	Local string `json:"local"` // in Zone, as the schedule reads
	Zone  string `json:"zone"`
	State string `json:"state"` // opened or closed from At on
	Cause string `json:"cause"` // request, gatekeeper/<name> or default, as in the history
	// Label names the calendar event or period of the keeper that makes the change, if any.
	Label string `json:"label,omitempty"`
}

// calendarReader reads the calendar of a keeper with spec.calendar.
type calendarReader func(gk *gatingv1alpha1.GateKeeper) (*calendar.Calendar, error)

// errCalendarInArtifact: the keeper's calendar is a file of a source's artifact, which only the
// gating-controller downloads (the artifact server serves the controllers' namespace, not users).
var errCalendarInArtifact = errors.New("the calendar is in a source's artifact, which kubectl gate does not download")

// readCalendar reads a keeper's calendar from its ConfigMap, with the user's rights.
func readCalendar(ctx context.Context, c client.Reader) calendarReader {
	return func(gk *gatingv1alpha1.GateKeeper) (*calendar.Calendar, error) {
		if src := gk.Spec.Calendar.SourceRef; src != nil {
			return nil, fmt.Errorf("spec.calendar.sourceRef: %s '%s': %w", src.Kind, src.Name, errCalendarInArtifact)
		}
		ref := gk.Spec.Calendar.ConfigMapRef
		if ref == nil {
			return nil, errors.New("spec.calendar: one of configMapRef and sourceRef is required")
		}
		// Unstructured, so the plugin's scheme needs no core types.
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		if err := c.Get(ctx, client.ObjectKey{Namespace: gk.Namespace, Name: ref.Name}, cm); err != nil {
			return nil, fmt.Errorf("spec.calendar.configMapRef: ConfigMap '%s': %w", ref.Name, err)
		}
		data, ok, _ := unstructured.NestedString(cm.Object, "data", ref.Key)
		if !ok {
			return nil, fmt.Errorf("spec.calendar.configMapRef: ConfigMap '%s' key '%s': no such key", ref.Name, ref.Key)
		}
		loc, err := time.LoadLocation(gk.Spec.TimeZone)
		if err != nil {
			loc = time.UTC // the spec's own check reports it
		}
		cal, err := calendar.Parse([]byte(data), loc)
		if err != nil {
			return nil, fmt.Errorf("spec.calendar.configMapRef: ConfigMap '%s' key '%s': %w", ref.Name, ref.Key, err)
		}
		return cal, nil
	}
}

// compileKeeper compiles a keeper at now, with its calendar when it has one.
func compileKeeper(gk *gatingv1alpha1.GateKeeper, cals calendarReader, now time.Time) (*keeper.Keeper, error) {
	if gk.Spec.Calendar == nil || cals == nil {
		return keeper.Compile(gk.Spec, nil, now)
	}
	cal, err := cals(gk)
	if err != nil {
		return nil, err
	}
	return keeper.Compile(gk.Spec, cal, now)
}

// gateTimeline lists the gate's keepers and the changes of its state over the next
// timelineDays, each shown in the time zone of the schedule that makes it (UTC for a request's
// end). A keeper that cannot be evaluated leaves the timeline empty with a note: the gate is held
// closed until it is fixed, whatever the schedules say.
func gateTimeline(gate *gatingv1alpha1.Gate, keepers []gatingv1alpha1.GateKeeper, now time.Time, cals calendarReader) ([]uiKeeper, []uiTransition, string) {
	sort.Slice(keepers, func(i, j int) bool { return keepers[i].Name < keepers[j].Name })
	in := gatestate.NewInputs(gate, nil)
	parsed := map[string]*keeper.Keeper{}
	shown := []uiKeeper{}
	var broken, unread []string
	for _, gk := range keepers {
		k := uiKeeper{Name: gk.Name, TimeZone: orDefault(gk.Spec.TimeZone, "UTC")}
		s, err := compileKeeper(&gk, cals, now)
		switch {
		case errors.Is(err, errCalendarInArtifact):
			// Not broken: what it does now is in its status, not on this timeline.
			k.Error = collapse(err.Error())
			unread = append(unread, fmt.Sprintf("'%s'", gk.Name))
		case err != nil:
			k.Error = collapse(err.Error())
			broken = append(broken, fmt.Sprintf("'%s'", gk.Name))
		default:
			in.Keepers = append(in.Keepers, gatestate.Keeper{Name: gk.Name, Schedule: s})
			parsed[gk.Name] = s
		}
		shown = append(shown, k)
	}
	if len(broken) > 0 {
		return shown, []uiTransition{}, fmt.Sprintf("GateKeeper %s cannot be evaluated: no timeline until it is fixed",
			strings.Join(broken, ", "))
	}
	if len(unread) > 0 {
		return shown, []uiTransition{}, fmt.Sprintf("GateKeeper %s reads its calendar from a source's artifact, which kubectl gate does not download: "+
			"no timeline (the GateKeeper's status says what it does now)", strings.Join(unread, ", "))
	}

	until := now.Add(timelineDays * 24 * time.Hour)
	changes, until, note := stateChanges(in, now, until)
	timeline := []uiTransition{}
	state, _ := in.StateAt(now)
	for _, c := range changes {
		if !c.at.Before(until) {
			break
		}
		s, cause := in.StateAt(c.at)
		if s == state {
			continue // a change hidden by a request or by another keeper
		}
		state = s
		tr := uiTransition{At: formatTime(c.at), Local: c.at.In(c.zone).Format("Mon 2 Jan 2006 15:04 MST"),
			Zone: c.zone.String(), State: string(s), Cause: cause}
		if name, ok := strings.CutPrefix(cause, "gatekeeper/"); ok && parsed[name] != nil {
			// The event or period that closes the gate; for an opening, the one that ends.
			at := c.at
			if s == gatingv1alpha1.GateOpened {
				at = c.at.Add(-time.Nanosecond)
			}
			tr.Label = parsed[name].Label(at)
		}
		timeline = append(timeline, tr)
	}
	return shown, timeline, note
}

// change is an instant at which a gate's state may change, with the zone to show it in.
type change struct {
	at   time.Time
	zone *time.Location
}

// stateChanges are the instants from now until until at which the state of the gate (in) may
// change, in order: the end of its request and the transitions of its keepers. A
// keeper that changes too often shortens the timeline: until is where it stops then, and note
// says why.
func stateChanges(in gatestate.Inputs, now, until time.Time) (changes []change, _ time.Time, note string) {
	if in.ResetAt != nil && in.ResetAt.After(now) && in.ResetAt.Before(until) {
		changes = append(changes, change{at: *in.ResetAt, zone: time.UTC})
	}
	for _, k := range in.Keepers {
		ts, complete := k.Schedule.Transitions(now, until, maxKeeperTransitions)
		if !complete {
			note = fmt.Sprintf("GateKeeper '%s' changes more than %d times in %d days: the timeline stops at its last one shown",
				k.Name, maxKeeperTransitions, timelineDays)
			if last := ts[len(ts)-1].At.Add(time.Nanosecond); last.Before(until) {
				until = last
			}
		}
		for _, t := range ts {
			changes = append(changes, change{at: t.At, zone: k.Schedule.Location()})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].at.Before(changes[j].at) })
	return changes, until, note
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
