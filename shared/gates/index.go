package gates

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// RefsIndexKey is the field index on gated objects: one `namespace/name` value per referenced gate.
const RefsIndexKey = "spec.gates.refs"

// IndexRefs is the client.IndexerFunc behind RefsIndexKey.
func IndexRefs(obj client.Object) []string {
	g := Of(obj)
	if g == nil {
		return nil
	}
	keys := make([]string, 0, len(g.Refs))
	for _, ref := range g.Refs {
		keys = append(keys, gatesapi.ResolveRef(obj.GetNamespace(), ref).String())
	}
	return keys
}

// SetupIndex registers RefsIndexKey for objects of obj's kind (typed gatesapi.Gated objects, or
// unstructured objects with `spec.gates`).
func SetupIndex(ctx context.Context, indexer client.FieldIndexer, obj client.Object) error {
	return indexer.IndexField(ctx, obj, RefsIndexKey, IndexRefs)
}
