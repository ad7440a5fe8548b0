package gatestate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

var now = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func TestTakeRequests(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		handled     string // status.lastHandledOpenAt
		requests    []Request
		warnings    []string
	}{
		"an open request with its reason, author, duration and revision": {
			annotations: map[string]string{
				"open.gate.fluxcd.io/requestedAt": "2026-03-02T08:59:00Z", "open.gate.fluxcd.io/reason": "hotfix",
				"open.gate.fluxcd.io/requestedBy": "ana", "open.gate.fluxcd.io/duration": "2h",
				"open.gate.fluxcd.io/revision": "main@sha1:abc",
			},
			requests: []Request{{State: gatingv1.GateOpened, At: now.Add(-time.Minute), Reason: "hotfix", RequestedBy: "ana",
				Duration: new(2 * time.Hour), Revision: "main@sha1:abc"}},
		},
		"a request handled before is not taken again": {
			annotations: map[string]string{"open.gate.fluxcd.io/requestedAt": "2026-03-02T08:59:00Z"},
			handled:     "2026-03-02T08:59:00Z",
		},
		"both, oldest first": {
			annotations: map[string]string{"open.gate.fluxcd.io/requestedAt": "2026-03-02T08:59:00Z", "close.gate.fluxcd.io/requestedAt": "2026-03-02T08:00:00Z"},
			requests:    []Request{{State: gatingv1.GateClosed, At: now.Add(-time.Hour)}, {State: gatingv1.GateOpened, At: now.Add(-time.Minute)}},
		},
		"within the clock skew ahead, it counts as now": {
			annotations: map[string]string{"close.gate.fluxcd.io/requestedAt": "2026-03-02T09:00:30Z"},
			requests:    []Request{{State: gatingv1.GateClosed, At: now}},
		},
		"further ahead, it is refused": {
			annotations: map[string]string{"close.gate.fluxcd.io/requestedAt": "2026-03-02T10:00:00Z"},
			warnings:    []string{"close request ignored: close.gate.fluxcd.io/requestedAt '2026-03-02T10:00:00Z' is in the future (now is 2026-03-02T09:00:00Z)"},
		},
		"a time that does not parse": {
			annotations: map[string]string{"open.gate.fluxcd.io/requestedAt": "yesterday"},
			warnings:    []string{"open request ignored: open.gate.fluxcd.io/requestedAt 'yesterday' is not an RFC 3339 time such as 2026-11-22T10:00:00Z"},
		},
		"a duration that is not positive": {
			annotations: map[string]string{"open.gate.fluxcd.io/requestedAt": "2026-03-02T08:59:00Z", "open.gate.fluxcd.io/duration": "-1h"},
			warnings:    []string{"open request ignored: open.gate.fluxcd.io/duration '-1h' is not a positive duration such as 2h"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			gate := &gatingv1.Gate{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			gate.Status.LastHandledOpenAt = tc.handled
			requests, warnings := TakeRequests(gate, now)
			g.Expect(requests).To(Equal(tc.requests))
			g.Expect(warnings).To(Equal(tc.warnings))
			// Every request read, taken or refused, is marked handled: a warning is given once.
			again, warnings := TakeRequests(gate, now)
			g.Expect(again).To(BeEmpty())
			g.Expect(warnings).To(BeEmpty())
		})
	}
}

func TestApplyRequest(t *testing.T) {
	hour := metav1.Duration{Duration: time.Hour}
	for name, tc := range map[string]struct {
		spec    gatingv1.GateSpec
		req     Request
		keeper  gatingv1.GateKeeperActive
		reset   *time.Time // status.resetToDefaultAt after
		applied bool
	}{
		"a request for the other state lasts until the next request": {
			req: Request{State: gatingv1.GateOpened, At: now}, keeper: gatingv1.ActiveNone, applied: true,
		},
		"for its duration": {
			req: Request{State: gatingv1.GateOpened, At: now, Duration: new(2 * time.Hour)}, keeper: gatingv1.ActiveNone, applied: true,
			reset: new(now.Add(2 * time.Hour)),
		},
		"for the gate's window": {
			spec: gatingv1.GateSpec{Window: &hour},
			req:  Request{State: gatingv1.GateOpened, At: now}, keeper: gatingv1.ActiveNone, applied: true, reset: new(now.Add(time.Hour)),
		},
		"a request for the default state returns the gate to it at once": {
			spec: gatingv1.GateSpec{Window: &hour},
			req:  Request{State: gatingv1.GateClosed, At: now}, keeper: gatingv1.ActiveNone, applied: true, reset: new(now),
		},
		"unless a keeper holds the gate in the other state: then it overrides the keeper for its window": {
			spec: gatingv1.GateSpec{Window: &hour},
			req:  Request{State: gatingv1.GateClosed, At: now}, keeper: gatingv1.ActiveOpened, applied: true, reset: new(now.Add(time.Hour)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			gate := &gatingv1.Gate{Spec: tc.spec}
			gate.Spec.Default = gatingv1.GateClosed
			applied, why := ApplyRequest(gate, tc.req, tc.keeper)
			g.Expect(applied).To(Equal(tc.applied), why)
			g.Expect(gate.Status.Request).To(Equal(&gatingv1.GateRequest{State: tc.req.State}))
			if tc.reset == nil {
				g.Expect(gate.Status.ResetToDefaultAt).To(BeNil())
			} else {
				g.Expect(gate.Status.ResetToDefaultAt).To(Equal(new(metav1.NewTime(*tc.reset))))
			}
		})
	}

	// A request older than the one in force is refused.
	g := NewWithT(t)
	gate := &gatingv1.Gate{}
	g.Expect(ApplyRequest(gate, Request{State: gatingv1.GateClosed, At: now}, gatingv1.ActiveNone)).To(BeTrue())
	applied, why := ApplyRequest(gate, Request{State: gatingv1.GateOpened, At: now.Add(-time.Minute)}, gatingv1.ActiveNone)
	g.Expect(applied).To(BeFalse())
	g.Expect(why).To(Equal("open request of 2026-03-02T08:59:00Z ignored: the request of 2026-03-02T09:00:00Z is later"))
}
