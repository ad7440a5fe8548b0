package main

import (
	"context"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// nodeActions are the buttons of an object of the flow, and gateActions those of a gate: what the
// viewer's RBAC allows, asked of the API server (SelfSubjectAccessReview). The page offers only
// these; the API server still decides each action, made with the viewer's own credentials.
type nodeActions struct {
	Reconcile bool `json:"reconcile"`
	Suspend   bool `json:"suspend"`
}

type gateActions struct {
	Open    bool `json:"open"`
	Close   bool `json:"close"`
	Respond bool `json:"respond"`
}

// accessKey is one question to the API server: may the viewer do verb on resource in namespace.
type accessKey struct {
	namespace, group, resource, verb string
}

// accessCache remembers the answers for accessTTL, so that the page's data, read after every
// change, asks the API server once per namespace and kind, not once per object and read.
type accessCache struct {
	review func(context.Context, *authorizationv1.SelfSubjectAccessReview) error
	now    func() time.Time

	mu      sync.Mutex
	answers map[accessKey]accessAnswer
}

type accessAnswer struct {
	allowed bool
	at      time.Time
}

const accessTTL = 30 * time.Second

func newAccessCache(review func(context.Context, *authorizationv1.SelfSubjectAccessReview) error) *accessCache {
	return &accessCache{review: review, now: time.Now, answers: map[accessKey]accessAnswer{}}
}

// resolve answers every key, asking the API server, a few at a time, for those not known or
// too old. An error answers no: a button not offered is the safe side.
func (a *accessCache) resolve(ctx context.Context, keys map[accessKey]bool) {
	now := a.now()
	var ask []accessKey
	a.mu.Lock()
	for k := range keys {
		if ans, ok := a.answers[k]; ok && now.Sub(ans.at) < accessTTL {
			keys[k] = ans.allowed
			continue
		}
		ask = append(ask, k)
	}
	a.mu.Unlock()

	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	results := make([]bool, len(ask))
	failed := make([]bool, len(ask))
	for i, k := range ask {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer func() { <-limit; wg.Done() }()
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: k.namespace, Verb: k.verb,
					Group: k.group, Resource: k.resource}}}
			err := a.review(ctx, review)
			results[i], failed[i] = err == nil && review.Status.Allowed, err != nil
		}()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, k := range ask {
		keys[k] = results[i]
		if !failed[i] { // a failed question is asked again on the next read
			a.answers[k] = accessAnswer{allowed: results[i], at: now}
		}
	}
}
