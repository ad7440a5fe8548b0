package webhook

import (
	"context"
	"encoding/hex"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// claimLabel marks the Leases of Claims, for the sweep.
const claimLabel = "gating.toolkit.fluxcd.io/webhook-request"

// Claims remember the accepted requests of every replica in the API: one Lease per request, in
// the controller's namespace, named by the request's digest and holding its window. Creating an
// object is atomic, so of two replicas that receive the same request, one creates the Lease and
// the other finds it: the request is a replay wherever it is sent again. Only authenticated
// requests are claimed, within the receivers' rate limits, so a caller cannot fill the namespace.
type Claims struct {
	// Client creates and deletes the Leases; Reader reads them uncached.
	Client client.Client
	Reader client.Reader
	// Namespace is the controller's (RUNTIME_NAMESPACE), Holder the replica's name.
	Namespace string
	Holder    string
	// Kind says which receiver claims ("receiver", "webhook-receiver"): each has its own keys.
	Kind string
}

// name is the Lease of a request's key: 160 bits of its digest are enough to name it.
func (c *Claims) name(key [32]byte) string {
	return c.Kind + "-" + hex.EncodeToString(key[:20])
}

// Claim records key, accepted at now, until now+window. It returns replay when another claim of
// key is still in its window; an expired claim is replaced.
func (c *Claims) Claim(ctx context.Context, key [32]byte, now time.Time, window time.Duration) (replay bool, err error) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.name(key), Labels: map[string]string{claimLabel: c.Kind}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(c.Holder),
			AcquireTime:          &metav1.MicroTime{Time: now},
			LeaseDurationSeconds: ptr.To(int32((window + time.Second - 1) / time.Second)),
		},
	}
	for range 2 {
		err := c.Client.Create(ctx, lease.DeepCopy())
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		existing := &coordinationv1.Lease{}
		if err := c.Reader.Get(ctx, client.ObjectKeyFromObject(lease), existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, err
		}
		if !expired(existing, now) {
			return true, nil
		}
		err = c.Client.Delete(ctx, existing, client.Preconditions{ResourceVersion: &existing.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, err
		}
	}
	// Claimed and expired again between two requests: another replica races on the same key.
	return true, nil
}

// Release drops the claim of key: the request was accepted but could not be written, and its
// sender may send it again.
func (c *Claims) Release(ctx context.Context, key [32]byte) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.name(key)}}
	return client.IgnoreNotFound(c.Client.Delete(ctx, lease))
}

// expired says whether a claim's window is over at now.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.AcquireTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return !now.Before(l.Spec.AcquireTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// Sweep deletes the claims whose window is over.
func (c *Claims) Sweep(ctx context.Context, now time.Time) error {
	var list coordinationv1.LeaseList
	if err := c.Reader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{claimLabel: c.Kind}); err != nil {
		return err
	}
	for i := range list.Items {
		l := &list.Items[i]
		if !expired(l, now) {
			continue
		}
		err := c.Client.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// Start sweeps every minute until ctx is done: a manager Runnable, on every replica (a delete
// is conditional on what was read, so two sweeps do not collide).
func (c *Claims) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("webhook-claims").WithValues("receiver", c.Kind)
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := c.Sweep(ctx, now); err != nil {
				log.Error(err, "deleting the claims of past requests")
			}
		}
	}
}

// NeedLeaderElection is false: every replica sweeps.
func (c *Claims) NeedLeaderElection() bool { return false }
