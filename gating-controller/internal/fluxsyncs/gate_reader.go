package fluxsyncs

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// cachedGates lets shared/gates, which reads Gates as unstructured objects (its consumers do
// not import the gating-controller), read them from the gating-controller's own cache of typed
// Gates: releasing 200 objects then costs no Gate read from the API.
type cachedGates struct{ client.Reader }

func (c cachedGates) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != gatesapi.GateGVK {
		return c.Reader.Get(ctx, key, obj, opts...)
	}
	gate := &gatingv1.Gate{}
	if err := c.Reader.Get(ctx, key, gate, opts...); err != nil {
		return err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gate)
	if err != nil {
		return err
	}
	u.SetUnstructuredContent(m)
	u.SetGroupVersionKind(gatesapi.GateGVK)
	return nil
}
