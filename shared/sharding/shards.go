package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The Leases' label and annotation.
const (
	// ControllerLabel names the controller whose shards the Lease is a member of.
	ControllerLabel = "sharding.sluice.dev/controller"
	// RingAnnotation is the member set (RingID) the replica acknowledged: it reconciles nothing
	// it no longer owns under it.
	RingAnnotation = "sharding.sluice.dev/ring"
)

// Options configure Shards.
type Options struct {
	// Controller names the controller; its replicas share the Leases labelled with it.
	Controller string
	// Namespace holds the Leases (the controller's own).
	Namespace string
	// Identity is this replica's (its pod's name): unique among the replicas.
	Identity string
	// LeaseDuration is how long a member counts without renewing (DefaultLeaseDuration when
	// zero); RenewPeriod how often it renews and looks at the others (DefaultRenewPeriod).
	LeaseDuration, RenewPeriod time.Duration
	// Slots and Load shape the assignment (DefaultSlots, DefaultLoad when zero).
	Slots int
	Load  float64
	// OnSettled is called when a new assignment has settled, for the controller to enqueue the
	// objects it now owns (those it took over had no event of their own).
	OnSettled func()
	// Crash leaves the Lease in place when Start returns, as a killed replica would: for tests.
	Crash bool
}

// Defaults of Options.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewPeriod   = 2 * time.Second
)

// Shards is one replica's view of the shards. It is safe for concurrent use.
type Shards struct {
	opts Options
	c    client.Client

	mu sync.Mutex
	// members, ring and owners are the live member set, its RingID and its assignment.
	members []string
	ring    string
	owners  []string
	// acked is the ring this replica's Lease acknowledges; settled says that every live member
	// acknowledged ring.
	acked   string
	settled bool
	// renewed is when this replica last renewed its Lease.
	renewed time.Time
	// seen remembers, per member, its Lease's last renew time and when this replica saw it
	// change: a member is live while that was within its duration, by this replica's clock.
	seen map[string]observed
	// inflight counts the reconciles of each key started through Begin and not done.
	inflight map[string]int
	// settledHooks run when a new assignment settles (Options.OnSettled, Source).
	settledHooks []func()
}

type observed struct {
	renew string
	at    time.Time
}

// New returns the Shards of opts; c must read Leases from the API server, not a cache.
func New(c client.Client, opts Options) (*Shards, error) {
	if opts.Controller == "" || opts.Namespace == "" || opts.Identity == "" {
		return nil, errors.New("sharding needs the controller's name, its namespace and the replica's identity (POD_NAME and RUNTIME_NAMESPACE)")
	}
	if errs := validation.IsValidLabelValue(opts.Identity); len(errs) > 0 {
		// It labels the objects of its shard.
		return nil, fmt.Errorf("the replica's identity %q is not a valid label value: %s", opts.Identity, strings.Join(errs, "; "))
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewPeriod <= 0 {
		opts.RenewPeriod = DefaultRenewPeriod
	}
	if opts.Slots <= 0 {
		opts.Slots = DefaultSlots
	}
	if opts.Load < 1 {
		opts.Load = DefaultLoad
	}
	s := &Shards{opts: opts, c: c, seen: map[string]observed{}, inflight: map[string]int{}}
	if opts.OnSettled != nil {
		s.subscribe(opts.OnSettled)
	}
	return s, nil
}

func (s *Shards) subscribe(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settledHooks = append(s.settledHooks, f)
}

// NeedLeaderElection is false: every replica is a member.
func (s *Shards) NeedLeaderElection() bool { return false }

// Start keeps this replica's Lease and view until ctx ends, then deletes the Lease (unless
// Crash), so that the others take its objects at once.
func (s *Shards) Start(ctx context.Context) error {
	t := time.NewTicker(s.opts.RenewPeriod)
	defer t.Stop()
	for {
		if err := s.tick(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Info("sharding: renewing or reading the shard Leases failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.settled = false
			s.mu.Unlock()
			if s.opts.Crash {
				return nil
			}
			release, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return client.IgnoreNotFound(s.c.Delete(release, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.opts.Namespace, Name: s.leaseName()}}))
		case <-t.C:
		}
	}
}

func (s *Shards) leaseName() string { return s.opts.Controller + "-shard-" + s.opts.Identity }

// tick renews the Lease, reads the others', and moves the view on: a new member set, this
// replica's acknowledgement once it drained, the settlement once all acknowledged.
func (s *Shards) tick(ctx context.Context) error {
	if err := s.renew(ctx); err != nil {
		return err
	}
	var list coordinationv1.LeaseList
	if err := s.c.List(ctx, &list, client.InNamespace(s.opts.Namespace), client.MatchingLabels{ControllerLabel: s.opts.Controller}); err != nil {
		return err
	}
	now := time.Now()
	s.mu.Lock()
	acks := map[string]string{}
	var members []string
	for _, l := range list.Items {
		id := ptr.Deref(l.Spec.HolderIdentity, "")
		if id == "" || l.Spec.RenewTime == nil {
			continue
		}
		renew := l.Spec.RenewTime.Format(time.RFC3339Nano)
		if o, ok := s.seen[id]; !ok || o.renew != renew {
			s.seen[id] = observed{renew: renew, at: now}
		}
		duration := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
		if now.Sub(s.seen[id].at) < duration {
			members = append(members, id)
			acks[id] = l.Annotations[RingAnnotation]
		}
	}
	slices.Sort(members)
	if ring := RingID(members); ring != s.ring {
		s.members, s.ring, s.owners, s.settled = members, ring, Assign(members, s.opts.Slots, s.opts.Load), false
	}
	ackNow := s.acked != s.ring && s.drained()
	if ackNow {
		s.acked = s.ring
	}
	wasSettled := s.settled
	s.settled = s.acked == s.ring && slices.Contains(s.members, s.opts.Identity)
	for _, m := range s.members {
		if m != s.opts.Identity && acks[m] != s.ring {
			s.settled = false
		}
	}
	settledNow := s.settled && !wasSettled
	hooks := slices.Clone(s.settledHooks)
	s.mu.Unlock()
	if ackNow {
		if err := s.renew(ctx); err != nil {
			return err
		}
	}
	if settledNow {
		for _, f := range hooks {
			f()
		}
	}
	return nil
}

// drained: no reconcile is running of a key this replica does not own under ring. Called with
// mu held.
func (s *Shards) drained() bool {
	for key, n := range s.inflight {
		if n > 0 && s.ownerLocked(key) != s.opts.Identity {
			return false
		}
	}
	return true
}

// renew creates or renews this replica's Lease with the acknowledged ring.
func (s *Shards) renew(ctx context.Context) error {
	s.mu.Lock()
	acked := s.acked
	s.mu.Unlock()
	now := metav1.NewMicroTime(time.Now())
	key := client.ObjectKey{Namespace: s.opts.Namespace, Name: s.leaseName()}
	l := &coordinationv1.Lease{}
	err := s.c.Get(ctx, key, l)
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{ControllerLabel: s.opts.Controller}}}
		s.fill(l, acked, now)
		l.Spec.AcquireTime = &now
		err = s.c.Create(ctx, l)
	case err == nil:
		s.fill(l, acked, now)
		err = s.c.Update(ctx, l)
	}
	if err != nil {
		return fmt.Errorf("renewing the shard Lease %s: %w", key, err)
	}
	s.mu.Lock()
	s.renewed = time.Now()
	s.mu.Unlock()
	return nil
}

func (s *Shards) fill(l *coordinationv1.Lease, acked string, now metav1.MicroTime) {
	l.Spec.HolderIdentity = ptr.To(s.opts.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32((s.opts.LeaseDuration + time.Second - 1) / time.Second))
	l.Spec.RenewTime = &now
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[RingAnnotation] = acked
}

// Owner is the member that owns key (namespace/name) under this replica's view, "" without
// members yet.
func (s *Shards) Owner(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownerLocked(key)
}

func (s *Shards) ownerLocked(key string) string {
	if len(s.owners) == 0 {
		return ""
	}
	return s.owners[SlotOf(key, s.opts.Slots)]
}

// Owns says whether this replica may reconcile key now: the assignment settled, the key is
// its own, and its Lease is fresh.
func (s *Shards) Owns(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownsLocked(key)
}

func (s *Shards) ownsLocked(key string) bool {
	return s.settled && time.Since(s.renewed) < s.opts.LeaseDuration/2 && s.ownerLocked(key) == s.opts.Identity
}

// Begin starts a reconcile of key if this replica owns it: done must be called when it ends.
// While it runs, a new assignment that takes key away is not acknowledged, so the new owner
// waits for it.
func (s *Shards) Begin(key string) (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ownsLocked(key) {
		return nil, false
	}
	s.inflight[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.inflight[key]--; s.inflight[key] <= 0 {
				delete(s.inflight, key)
			}
		})
	}, true
}

// OnSettle calls f (on the renewing goroutine: f must not block) each time a new assignment
// has settled.
func (s *Shards) OnSettle(f func()) { s.subscribe(f) }

// Keeps says whether key stays with this replica: false only once every member acknowledged
// an assignment that gives it to another, so a replica never lets go of what no one took.
func (s *Shards) Keeps(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.settled {
		return true
	}
	owner := s.ownerLocked(key)
	return owner == "" || owner == s.opts.Identity
}

// Members returns the live members of this replica's view and whether they all acknowledged it.
func (s *Shards) Members() ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.members), s.settled
}
