package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyCounter counts, through a watch of one kind in one namespace, the objects that satisfy
// ready. A benchmark waits on it instead of listing every object again and again: a LIST of a
// thousand objects ten times a second would load the API server more than the controller does.
// The events are read as they come; when the API server ends the watch (it drops watchers that
// fall behind a burst of changes), the count starts again from a LIST and a new watch.
type readyCounter struct {
	mu      sync.Mutex
	count   int
	err     error
	changed chan struct{} // a token when count changed
}

// watchReady starts counting; start it before the objects are created or changed.
func watchReady(b testing.TB, c client.WithWatch, list client.ObjectList, ns string, ready func(client.Object) bool) *readyCounter {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	r := &readyCounter{changed: make(chan struct{}, 1)}
	go func() {
		for ctx.Err() == nil {
			if err := r.follow(ctx, c, list, ns, ready); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
				r.signal()
				return
			}
		}
	}()
	return r
}

// follow lists the objects, counts the ready ones, then watches from the LIST's version until
// the watch ends.
func (r *readyCounter) follow(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, ready func(client.Object) bool) error {
	l := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
		return err
	}
	seen := map[string]bool{}
	count := 0
	if err := meta.EachListItem(l, func(o runtime.Object) error {
		obj := o.(client.Object)
		seen[obj.GetName()] = ready(obj)
		if seen[obj.GetName()] {
			count++
		}
		return nil
	}); err != nil {
		return err
	}
	r.set(count)
	w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}})
	if err != nil {
		return err
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		obj, ok := e.Object.(client.Object)
		if !ok {
			continue // an error event: the watch ends, follow starts again
		}
		was, is := seen[obj.GetName()], e.Type != watch.Deleted && ready(obj)
		seen[obj.GetName()] = is
		switch {
		case is && !was:
			count++
		case was && !is:
			count--
		default:
			continue
		}
		r.set(count)
	}
	return nil
}

func (r *readyCounter) set(count int) {
	r.mu.Lock()
	r.count = count
	r.mu.Unlock()
	r.signal()
}

func (r *readyCounter) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *readyCounter) state() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count, r.err
}

// wait returns when n objects are ready, failing after timeout.
func (r *readyCounter) wait(b testing.TB, n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for {
		count, err := r.state()
		switch {
		case err != nil:
			b.Fatalf("counting the ready objects: %v", err)
		case count >= n:
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			b.Fatalf("%d of %d ready after %s", count, n, timeout)
		}
	}
}
