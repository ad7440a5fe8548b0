package sharding

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// replica starts the Shards of identity in ns, stopped when the test ends or stop is called.
func replica(t *testing.T, ns, identity string, crash bool) (s *Shards, stop func()) {
	t.Helper()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err = New(c, Options{Controller: "source-controller", Namespace: ns, Identity: identity,
		LeaseDuration: 3 * time.Second, RenewPeriod: 100 * time.Millisecond, Crash: crash})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return s, stop
}

// settledOn waits until every replica settled on the members, and returns who owns each key.
func settledOn(t *testing.T, replicas []*Shards, members ...string) map[string]string {
	t.Helper()
	g := NewWithT(t)
	for _, r := range replicas {
		g.Eventually(func() bool {
			m, settled := r.Members()
			return settled && fmt.Sprint(m) == fmt.Sprint(members)
		}, 20*time.Second, 50*time.Millisecond).Should(BeTrue(), "%s settled on %v", r.opts.Identity, members)
	}
	owners := map[string]string{}
	for i := range 300 {
		key := fmt.Sprintf("tenant-%d/app-%d", i%7, i)
		var owner string
		for _, r := range replicas {
			if r.Owns(key) {
				g.Expect(owner).To(BeEmpty(), "%s owned by %s and %s", key, owner, r.opts.Identity)
				owner = r.opts.Identity
			}
		}
		g.Expect(owner).NotTo(BeEmpty(), "%s has no owner", key)
		owners[key] = owner
	}
	return owners
}

// Three replicas agree on one owner per key, each about a third; one leaving (gracefully, or
// killed: its Lease expires) hands its keys to the others and moves nothing else; a key whose
// reconcile runs on its old owner is not taken by the new one until it ends.
func TestShardsAgreeAndHandOver(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	a, _ := replica(t, ns, "a", false)
	b, _ := replica(t, ns, "b", false)
	c, stopC := replica(t, ns, "c", false)
	owners := settledOn(t, []*Shards{a, b, c}, "a", "b", "c")
	count := map[string]int{}
	for _, o := range owners {
		count[o]++
	}
	t.Logf("300 keys over 3 replicas: %v", count)
	for _, n := range count {
		g.Expect(n).To(BeNumerically("~", 100, 40))
	}

	// c leaves: its keys go to a and b, no other key moves.
	stopC()
	after := settledOn(t, []*Shards{a, b}, "a", "b")
	for key, o := range owners {
		if o != "c" {
			g.Expect(after[key]).To(Equal(o), "%s moved from %s though its owner stayed", key, o)
		}
	}

	// A key of a, reconciling while d joins and takes it: d does not own it until a is done.
	var key string
	var done func()
	d, stopD := replica(t, ns, "d", true)
	for k, o := range after {
		if o == "a" && Assign([]string{"a", "b", "d"}, DefaultSlots, DefaultLoad)[SlotOf(k, DefaultSlots)] == "d" {
			var ok bool
			done, ok = a.Begin(k)
			g.Expect(ok).To(BeTrue())
			key = k
			break
		}
	}
	g.Expect(key).NotTo(BeEmpty(), "a key moves from a to d")
	g.Consistently(func() bool { return d.Owns(key) || b.Owns(key) }, time.Second, 50*time.Millisecond).Should(BeFalse(),
		"nobody takes %s while a reconciles it", key)
	_, settled := d.Members()
	g.Expect(settled).To(BeFalse(), "the new assignment waits for a's acknowledgement")
	done()
	settledOn(t, []*Shards{a, b, d}, "a", "b", "d")
	g.Expect(d.Owns(key)).To(BeTrue())

	// d is killed (its Lease stays, unrenewed): after its duration, a and b take its keys.
	killed := time.Now()
	stopD()
	g.Expect(d.Owns(key)).To(BeFalse(), "a stopped replica owns nothing")
	settledOn(t, []*Shards{a, b}, "a", "b")
	t.Logf("the killed replica's keys were taken %v after it stopped (Lease duration 3s)", time.Since(killed).Round(100*time.Millisecond))
	g.Expect(time.Since(killed)).To(BeNumerically(">=", 3*time.Second), "not before its Lease expired")
}
