package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitForTermination waits, within timeout, until the objects deleted in cs are gone. Unlike
// ssa's WaitForSetTermination it ends with ctx: a controller shutting down does not sit out
// the timeout.
func waitForTermination(ctx context.Context, c client.Client, cs *ssa.ChangeSet, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, e := range cs.Entries {
		if e.Action != ssa.DeletedAction {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: e.ObjMetadata.GroupKind.Group, Version: e.GroupVersion, Kind: e.ObjMetadata.GroupKind.Kind})
		key := client.ObjectKey{Namespace: e.ObjMetadata.Namespace, Name: e.ObjMetadata.Name}
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return fmt.Errorf("%s/%s/%s termination: %w", e.ObjMetadata.GroupKind.Kind, key.Namespace, key.Name, err)
		}
	}
	return nil
}
