package sharding

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source enqueues, each time a new assignment settles, every object of the list's kind that
// this replica now owns: those it took over had no event of their own. c lists them (the
// manager's cached client).
func (s *Shards) Source(c client.Reader, newList func() client.ObjectList) source.Source {
	events := make(chan event.GenericEvent, 1024)
	s.subscribe(func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			list := newList()
			if err := c.List(ctx, list); err != nil {
				return
			}
			_ = meta.EachListItem(list, func(o runtime.Object) error {
				obj, ok := o.(client.Object)
				if ok && s.Owns(obj.GetNamespace()+"/"+obj.GetName()) {
					select {
					case events <- event.GenericEvent{Object: obj}:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			})
		}()
	})
	return source.Channel(events, &handler.EnqueueRequestForObject{})
}
