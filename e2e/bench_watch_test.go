package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyCounter counts, through a watch of one kind in one namespace, the objects that satisfy
// ready. A benchmark waits on it instead of listing every object again and again: a LIST of a
// thousand objects ten times a second would load the API server more than the controller does.
// The events are read as they come (an API server drops a watcher that does not keep up).
type readyCounter struct {
	mu      sync.Mutex
	count   int
	changed chan struct{} // a token when count changed
	ended   chan struct{} // closed when the watch ends
}

// watchReady starts the watch; start it before the objects are created or changed.
func watchReady(b testing.TB, c client.WithWatch, list client.ObjectList, ns string, ready func(client.Object) bool) *readyCounter {
	w, err := c.Watch(context.Background(), list, client.InNamespace(ns))
	NewWithT(b).Expect(err).NotTo(HaveOccurred())
	b.Cleanup(w.Stop)
	r := &readyCounter{changed: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		defer close(r.ended)
		seen := map[string]bool{}
		for e := range w.ResultChan() {
			obj, ok := e.Object.(client.Object)
			if !ok {
				continue
			}
			was, is := seen[obj.GetName()], e.Type != watch.Deleted && ready(obj)
			seen[obj.GetName()] = is
			if was == is {
				continue
			}
			r.mu.Lock()
			if is {
				r.count++
			} else {
				r.count--
			}
			r.mu.Unlock()
			select {
			case r.changed <- struct{}{}:
			default:
			}
		}
	}()
	return r
}

func (r *readyCounter) ready() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// wait returns when n objects are ready, failing after timeout.
func (r *readyCounter) wait(b testing.TB, n int, timeout time.Duration) {
	deadline := time.After(timeout)
	for r.ready() < n {
		select {
		case <-r.changed:
		case <-r.ended:
			if r.ready() < n {
				b.Fatalf("the watch ended with %d of %d ready", r.ready(), n)
			}
		case <-deadline:
			b.Fatalf("%d of %d ready after %s", r.ready(), n, timeout)
		}
	}
}
