package dependency

import (
	"context"
	"testing"
)

// benchObject is a Cluster API-like object, as the readyExpr example of docs/resourceset.md reads it.
var benchObject = map[string]any{
	"apiVersion": "cluster.x-k8s.io/v1beta1",
	"kind":       "Cluster",
	"metadata":   map[string]any{"name": "my-cluster", "namespace": "dev", "generation": int64(3)},
	"spec":       map[string]any{"paused": false},
	"status":     map[string]any{"observedGeneration": int64(3), "controlPlaneReady": true},
}

const benchExpr = "metadata.generation == status.observedGeneration &&\nstatus.controlPlaneReady == true\n"

// BenchmarkEvaluateCached is a readyExpr check as the controller does it on every reconcile: a
// cache hit and an evaluation.
func BenchmarkEvaluateCached(b *testing.B) {
	cache := NewCache()
	ctx := context.Background()
	for b.Loop() {
		if err := evaluate(ctx, (&Checker{}).words(), "cluster.x-k8s.io/v1beta1/Cluster dev/my-cluster", benchObject, cache.get(benchExpr), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluateUncached compiles the expression on every check, as without the cache.
func BenchmarkEvaluateUncached(b *testing.B) {
	cache := NewCache()
	ctx := context.Background()
	for b.Loop() {
		if err := evaluate(ctx, (&Checker{}).words(), "cluster.x-k8s.io/v1beta1/Cluster dev/my-cluster", benchObject, cache.compile(benchExpr), false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostileExpression is the time an expression that would spin takes to hit the cost
// limit: comprehensions over a list of 100,000 items.
func BenchmarkHostileExpression(b *testing.B) {
	cache := NewCache()
	ctx := context.Background()
	object := map[string]any{"spec": map[string]any{"items": intList(100_000)}}
	for _, expr := range []string{"spec.items.all(x, spec.items.all(y, true))", "spec.items.exists(x, false)"} {
		prog := cache.get(expr)
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				if err := evaluate(ctx, (&Checker{}).words(), "testing.sluice.dev/v1/Widget dev/big", object, prog, false); !IsNotReady(err) {
					b.Fatal(err)
				}
			}
		})
	}
}
