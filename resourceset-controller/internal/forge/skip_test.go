package forge

import "testing"

func TestFreezeKeepsLastExportedInputOfSkippedRequests(t *testing.T) {
	last := []map[string]any{
		{"id": "1", "sha": "old1", "branch": "feat/one", "title": "One", "author": "ana", "labels": []any{"preview"}, "env": "staging"},
	}
	items := []Item{
		{ID: "1", SHA: "new1", Branch: "feat/one", Title: "One (edited)", Author: "ana", Labels: []string{"preview", "hold"}},
		{ID: "2", SHA: "new2", Branch: "feat/two", Labels: []string{"hold"}},
		{ID: "3", SHA: "new3", Branch: "feat/three"},
	}
	got := Freeze(items, []string{"hold"}, last)
	equal(t, ids(got), []string{"1", "3"})
	if got[0].SHA != "old1" || got[0].Title != "One" || len(got[0].Labels) != 1 {
		t.Fatalf("request 1 is not frozen at its last input: %+v", got[0])
	}
	if got[1].SHA != "new3" {
		t.Fatalf("request 3 moved: %+v", got[1])
	}
}

func TestFreezeNegatedLabelSkipsRequestsWithoutIt(t *testing.T) {
	last := []map[string]any{{"id": "1", "sha": "old1", "branch": "a"}}
	items := []Item{
		{ID: "1", SHA: "new1", Branch: "a"},
		{ID: "2", SHA: "new2", Branch: "b", Labels: []string{"ready"}},
	}
	got := Freeze(items, []string{"!ready"}, last)
	equal(t, ids(got), []string{"1", "2"})
	if got[0].SHA != "old1" || got[1].SHA != "new2" {
		t.Fatalf("got %+v", got)
	}
	if out := Freeze(items, nil, last); out[0].SHA != "new1" {
		t.Fatal("no skip labels froze a request")
	}
}
