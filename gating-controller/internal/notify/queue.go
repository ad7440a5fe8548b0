package notify

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Delivery is an event on its way to one target. Err, when set, is why the target could not be
// made (its Secret is missing, say): the delivery fails at once, without a request.
type Delivery[M Message] struct {
	Target Target
	Event  M
	Err    error
}

// Result is the end of one delivery, reported to the controller for the GateNotification's
// status and events.
type Result[M Message] struct {
	// Key names the target's object (a GateNotification, an Alert's Provider): namespace/name.
	Key   string
	Event M
	// Time the delivery ended.
	Time time.Time
	Outcome
}

// Queue takes messages (the events of gates, the events Alerts send) without ever blocking their
// producer (the gate reconciler, the event receiver), finds their
// targets, and delivers them: in order for each target, each target at its own pace, so that a
// slow or failing endpoint delays only its own notifications. Everything queued is held in
// memory: a restart loses what was not delivered yet.
type Queue[M Message] struct {
	// Resolve lists the deliveries of an event (the matching GateNotifications, with their
	// Secrets read); it runs on the queue's goroutine, not the reconciler's.
	Resolve func(ctx context.Context, ev M) []Delivery[M]
	// Sender delivers.
	Sender *Sender
	// Report is called with the result of each delivery.
	Report func(Result[M])
	// Log gets a line per delivery, without the URL or the token.
	Log logr.Logger
	// EveryReplica runs the queue on every replica, not the elected one only (with shards).
	EveryReplica bool

	in      chan M
	perSize int
	mu      sync.Mutex
	targets map[string]chan Delivery[M]
}

// DefaultQueueSize is how many events wait for their targets to be found; PerTargetQueueSize how
// many deliveries wait for one target.
const (
	DefaultQueueSize   = 1024
	PerTargetQueueSize = 128
)

// NewQueue makes a queue of size events (DefaultQueueSize when 0); events enqueued before Start
// wait for it.
func NewQueue[M Message](size int, sender *Sender, resolve func(context.Context, M) []Delivery[M], report func(Result[M]), log logr.Logger) *Queue[M] {
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &Queue[M]{Resolve: resolve, Sender: sender, Report: report, Log: log,
		in: make(chan M, size), perSize: PerTargetQueueSize, targets: map[string]chan Delivery[M]{}}
}

// Enqueue hands an event over; it never blocks. False when the queue is full and the event was
// dropped (logged).
func (q *Queue[M]) Enqueue(ev M) bool {
	select {
	case q.in <- ev:
		return true
	default:
		q.Log.Info("notification queue full: event dropped", ev.LogValues()...)
		return false
	}
}

// NeedLeaderElection: only the elected controller changes gates, so only it notifies; with
// shards (EveryReplica), each replica notifies the events of its gates.
func (q *Queue[M]) NeedLeaderElection() bool { return !q.EveryReplica }

// Start runs the queue until ctx ends (a controller-runtime Runnable).
func (q *Queue[M]) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-q.in:
			for _, d := range q.Resolve(ctx, ev) {
				q.toTarget(ctx, d)
			}
		}
	}
}

// toTarget queues a delivery behind the earlier ones of its target, starting the target's worker
// on its first delivery.
func (q *Queue[M]) toTarget(ctx context.Context, d Delivery[M]) {
	q.mu.Lock()
	ch, ok := q.targets[d.Target.Key]
	if !ok {
		ch = make(chan Delivery[M], q.perSize)
		q.targets[d.Target.Key] = ch
		go q.work(ctx, ch)
	}
	q.mu.Unlock()
	select {
	case ch <- d:
	default:
		q.finish(Result[M]{Key: d.Target.Key, Event: d.Event, Time: time.Now(),
			Outcome: Outcome{Err: errors.New("too many deliveries are waiting for this endpoint: the event was dropped")}})
	}
}

func (q *Queue[M]) work(ctx context.Context, ch chan Delivery[M]) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-ch:
			out := Outcome{Err: d.Err}
			if d.Err == nil {
				out = q.Sender.Deliver(ctx, d.Target, d.Event)
			}
			q.finish(Result[M]{Key: d.Target.Key, Event: d.Event, Time: time.Now(), Outcome: out})
		}
	}
}

func (q *Queue[M]) finish(r Result[M]) {
	kv := append(append([]any{"target", r.Key}, r.Event.LogValues()...), "attempts", r.Attempts)
	if r.Err != nil {
		q.Log.Info("notification delivery failed", append(kv, "error", r.Err.Error())...)
	} else {
		q.Log.V(1).Info("notification delivered", kv...)
	}
	if q.Report != nil {
		q.Report(r)
	}
}
