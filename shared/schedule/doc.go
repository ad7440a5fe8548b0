// Package schedule evaluates cron schedules the way every Sluice API means them (GateKeepers,
// ResourceSetInputProvider schedules): which state (closed, opened or none) they hold at an
// instant, and when that state next changes. Compile builds a Keeper from a Spec written in the
// terms of the API that holds it; the field names below are a GateKeeper's.
//
// # Semantics
//
// A bare cron expression (spec.cronjob.closed / spec.cronjob.opened) is active during every whole
// minute whose local wall-clock time, in spec.timeZone, it matches: '* * 20-30 11 *' is active
// from 20 November 00:00 to 1 December 00:00 local time, '0 9 * * *' from 09:00:00 to 09:01:00.
//
// A window is active from each activation of its schedule for its duration. Activations are the
// starts of the local minutes the schedule matches, which is what robfig/cron's Schedule.Next
// returns in that time zone (except where Next itself mishandles a DST change, as with Lord
// Howe's 30-minute shifts; the minute rule holds there too). The duration is counted on the
// wall clock: a window ends at the first instant after its activation at which the local clock
// reads at least activation+duration, so "Friday 18:00 for 63h" ends Monday 09:00 local time even
// when a DST change falls inside it. This is time.Date's normalisation of the end reading,
// made deterministic where time.Date's is not: an end reading inside a spring-forward gap ends
// the window when the clock jumps over it, and an end reading that occurs twice ends it at the
// first occurrence after the activation. Windows whose active periods overlap or touch merge.
//
// Daylight saving time: local minutes that do not exist (the spring-forward gap) never match;
// minutes that occur twice (fall back) match both times.
//
// A keeper is closed while any closed expression or window is active, else opened while any
// opened one is active. Outside its schedules, a keeper that lists schedules of one state only
// holds the gate in the other state (a freeze keeper keeps its gate opened between freezes);
// a keeper with both, or none, is none there and the gate falls back to its default.
//
// # Bounded work
//
// Nothing steps minute by minute: bare expressions are evaluated a local calendar day at a time
// with 1440-bit minute masks (days and months that cannot match are skipped whole), windows by
// searching back for the latest activation that can still be active and by jumping over chains
// of activations that merge. Every search stops at Horizon, and NextTransition reports false
// when the state does not change within it. One more cap applies when several expressions and
// windows of one state relay each other (see maxMergeSteps): at most 20,000 such hand-overs
// are followed, about 20ms of work, before NextTransition gives up and reports false.
package schedule
