// Package gatestest plays the gating-controller in the tests of gated controllers: it writes a
// Gate's Opened condition, as the gating-controller would.
package gatestest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gates"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// SetOpened creates the Gate ns/name if needed and sets its Opened condition (opened for every
// revision).
func SetOpened(t testing.TB, c client.Client, ns, name string, opened bool) {
	t.Helper()
	setGate(t, c, ns, name, opened, "")
}

// SetOpenedForRevision opens the Gate ns/name for one revision only, as an approval of that
// revision does (status.openedForRevision).
func SetOpenedForRevision(t testing.TB, c client.Client, ns, name, revision string) {
	t.Helper()
	setGate(t, c, ns, name, true, revision)
}

func setGate(t testing.TB, c client.Client, ns, name string, opened bool, revision string) {
	t.Helper()
	ctx := context.Background()
	gate := gates.NewGate()
	gate.SetNamespace(ns)
	gate.SetName(name)
	if err := c.Get(ctx, client.ObjectKeyFromObject(gate), gate); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Fatalf("reading gate %s/%s: %v", ns, name, err)
		}
		if err := c.Create(ctx, gate); err != nil {
			t.Fatalf("creating gate %s/%s: %v", ns, name, err)
		}
	}
	status := "False"
	if opened {
		status = "True"
	}
	if err := unstructured.SetNestedSlice(gate.Object, []any{map[string]any{
		"type": gatesapi.OpenedCondition, "status": status, "reason": "ReconciliationSucceeded", "message": "set by the test",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(gate.Object, "status", gatesapi.OpenedForRevisionField)
	if revision != "" {
		if err := unstructured.SetNestedField(gate.Object, revision, "status", gatesapi.OpenedForRevisionField); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Status().Update(ctx, gate); err != nil {
		t.Fatalf("setting the Opened condition of gate %s/%s: %v", ns, name, err)
	}
}
