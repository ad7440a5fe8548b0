package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// gateResource is the Gates' resource, watched beside the gated kinds.
var gateResource = gatingv1alpha1.GroupVersion.WithResource("gates")

// flowCache holds the flow's objects as the API server's watches report them, with the user's
// credentials, so that the page's data is read from memory and a change reaches the page within
// a second: the page is told of each change (subscribe) and reads the flow again.
type flowCache struct {
	dynamic   dynamic.Interface
	namespace string

	once     sync.Once
	startErr error
	// informers by kind ("Gate" for the gates); kinds that could not be listed are skipped.
	informers map[string]cache.SharedIndexInformer
	skipped   []skippedKind

	mu      sync.Mutex
	version uint64
	subs    map[chan struct{}]struct{}
}

func newFlowCache(dyn dynamic.Interface, namespace string) *flowCache {
	return &flowCache{dynamic: dyn, namespace: namespace, subs: map[chan struct{}]struct{}{}}
}

// start lists each kind once to learn whether the user may read it, then watches the readable
// ones until ctx ends. It runs once; later calls return the first call's error. A kind skipped
// here (not installed, or forbidden) stays skipped until the page is served again.
func (c *flowCache) start(ctx context.Context) error {
	c.once.Do(func() { c.startErr = c.run(ctx) })
	return c.startErr
}

func (c *flowCache) run(ctx context.Context) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dynamic, 10*time.Minute, c.namespace, nil)
	c.informers = map[string]cache.SharedIndexInformer{}
	watch := func(kind string, gvr schema.GroupVersionResource) error {
		if _, err := c.dynamic.Resource(gvr).Namespace(c.namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			if kind == gatingv1alpha1.GateKind && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("listing gates: %w", err)
			}
			c.skipped = append(c.skipped, skippedKind{Kind: kind, Reason: skipReason(err), notInstalled: apierrors.IsNotFound(err)})
			return nil
		}
		inf := factory.ForResource(gvr).Informer()
		// The page never shows managed fields: they are most of an object's size.
		if err := inf.SetTransform(func(obj any) (any, error) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				u.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.changed() },
			UpdateFunc: func(any, any) { c.changed() },
			DeleteFunc: func(any) { c.changed() },
		}); err != nil {
			return err
		}
		c.informers[kind] = inf
		return nil
	}
	if err := watch(gatingv1alpha1.GateKind, gateResource); err != nil {
		return err
	}
	for _, k := range flowKinds {
		if err := watch(k.kind, k.gvr); err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	synced, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for kind, inf := range c.informers {
		if !cache.WaitForCacheSync(synced.Done(), inf.HasSynced) {
			return fmt.Errorf("watching %s: the API server did not send the list within a minute", kind)
		}
	}
	return nil
}

// changed counts a change and wakes every subscriber; a subscriber that has not read the last
// wake-up gets one, not one per change.
func (c *flowCache) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// subscribe returns a channel woken on changes, and the function that ends the subscription.
func (c *flowCache) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

func (c *flowCache) currentVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// list returns the cached objects of kind; nil for a skipped kind.
func (c *flowCache) list(kind string) []unstructured.Unstructured {
	inf := c.informers[kind]
	if inf == nil {
		return nil
	}
	var out []unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, *u)
		}
	}
	return out
}

// get returns one cached object of kind, or nil.
func (c *flowCache) get(kind string, key types.NamespacedName) *unstructured.Unstructured {
	inf := c.informers[kind]
	if inf == nil {
		return nil
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	o, ok, err := inf.GetStore().GetByKey(k)
	if err != nil || !ok {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}
