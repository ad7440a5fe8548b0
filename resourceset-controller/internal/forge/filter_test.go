package forge

import (
	"errors"
	"testing"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestSelectBranchesByExpressionsSortedAndLimited(t *testing.T) {
	items := []Item{{ID: "m", Branch: "main"}, {ID: "b", Branch: "feat/b"}, {ID: "a", Branch: "feat/a"}, {ID: "x", Branch: "feat/skip-me"}}
	got, err := Select(Branches, items, Filter{IncludeBranch: `^feat/`, ExcludeBranch: `skip`, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, ids(got), []string{"a", "b"})
	got, _ = Select(Branches, items, Filter{Limit: 2})
	equal(t, ids(got), []string{"a", "b"})
}

func TestSelectRequestsByLabelsAndSourceBranchNewestFirst(t *testing.T) {
	items := []Item{
		{ID: "2", Branch: "feat/two", Labels: []string{"preview", "team-a"}},
		{ID: "10", Branch: "feat/ten", Labels: []string{"preview"}},
		{ID: "3", Branch: "fix/three", Labels: []string{"preview"}},
		{ID: "4", Branch: "feat/four"},
	}
	got, err := Select(Requests, items, Filter{Labels: []string{"preview"}, IncludeBranch: `^feat/`})
	if err != nil {
		t.Fatal(err)
	}
	// Numbers, not text: 10 is newer than 2.
	equal(t, ids(got), []string{"10", "2"})
	got, _ = Select(Requests, items, Filter{Labels: []string{"preview", "team-a"}})
	equal(t, ids(got), []string{"2"})
}

func TestSelectTagsBySemVerHighestFirst(t *testing.T) {
	items := []Item{{ID: "1", Tag: "v1.0.0"}, {ID: "2", Tag: "v1.2.0"}, {ID: "3", Tag: "v2.0.0"}, {ID: "4", Tag: "latest"}}
	got, err := Select(Tags, items, Filter{SemVer: "1.x"})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, ids(got), []string{"2", "1"})
}

func TestSelectEnvironmentsByName(t *testing.T) {
	items := []Item{
		{ID: "p", Extra: map[string]any{EnvironmentKey: "production"}},
		{ID: "r1", Extra: map[string]any{EnvironmentKey: "review/feat-1"}},
		{ID: "r2", Extra: map[string]any{EnvironmentKey: "review/feat-2"}},
	}
	got, err := Select(Environments, items, Filter{IncludeEnvironment: `^review/`, ExcludeEnvironment: `2$`})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, ids(got), []string{"r1"})
}

func TestSelectRefusesBadExpressionsNamingTheField(t *testing.T) {
	for kind, f := range map[Kind]Filter{
		Branches:     {ExcludeBranch: "("},
		Requests:     {IncludeBranch: "["},
		Environments: {IncludeEnvironment: "(?P<"},
		Tags:         {SemVer: "not a range"},
	} {
		_, err := Select(kind, nil, f)
		var invalid *inputs.InvalidFilterError
		if !errors.As(err, &invalid) || !inputs.IsTerminal(err) {
			t.Errorf("%s: got %v, want a terminal InvalidFilterError", kind, err)
		}
	}
}

func TestInputHasFluxOperatorKeysOnlyWhenSet(t *testing.T) {
	in := Item{ID: "7", SHA: "abc", Branch: "feat/x", Title: "Add x", Author: "ana", Labels: []string{"preview"}}.Input()
	want := map[string]any{"id": "7", "sha": "abc", "branch": "feat/x", "title": "Add x", "author": "ana", "labels": []any{"preview"}}
	if len(in) != len(want) {
		t.Fatalf("got %v, want %v", in, want)
	}
	for k, v := range want {
		if k == "labels" {
			if l, ok := in[k].([]any); !ok || len(l) != 1 || l[0] != "preview" {
				t.Fatalf("labels: got %#v", in[k])
			}
			continue
		}
		if in[k] != v {
			t.Fatalf("%s: got %v, want %v", k, in[k], v)
		}
	}
	tag := Item{ID: "t", SHA: "def", Tag: "v1"}.Input()
	if _, ok := tag["branch"]; ok || tag["tag"] != "v1" {
		t.Fatalf("a tag's input: %v", tag)
	}
}
