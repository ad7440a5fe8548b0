package gatesapi_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

func TestParseGatesAnnotation(t *testing.T) {
	long := strings.Repeat("a", 318)
	many := make([]string, 65)
	for i := range many {
		many[i] = "g" + strings.Repeat("x", i)
	}
	for _, tc := range []struct {
		value   string
		want    *gatesapi.Gates
		wantErr []string // parts the message must contain
	}{
		{value: "sre-approval", want: &gatesapi.Gates{Require: "all", Refs: []string{"sre-approval"}}},
		{value: "sre-approval, qa-approval", want: &gatesapi.Gates{Require: "all", Refs: []string{"sre-approval", "qa-approval"}}},
		{value: "  sre-approval ,qa-approval\n", want: &gatesapi.Gates{Require: "all", Refs: []string{"sre-approval", "qa-approval"}}},
		{value: "all: a, b", want: &gatesapi.Gates{Require: "all", Refs: []string{"a", "b"}}},
		{value: "oneOf: sre-approval, bypass", want: &gatesapi.Gates{Require: "oneOf", Refs: []string{"sre-approval", "bypass"}}},
		{value: "oneOf:bypass", want: &gatesapi.Gates{Require: "oneOf", Refs: []string{"bypass"}}},
		{value: " oneOf :\n  flux-system/sre-approval,\n  team-a/v1.2", want: &gatesapi.Gates{Require: "oneOf", Refs: []string{"flux-system/sre-approval", "team-a/v1.2"}}},
		{value: "a, ns/a", want: &gatesapi.Gates{Require: "all", Refs: []string{"a", "ns/a"}}},
		{value: strings.Join(many[:64], ","), want: &gatesapi.Gates{Require: "all", Refs: many[:64]}},

		{value: "", wantErr: []string{gatesapi.GatesAnnotation, "names no gate"}},
		{value: "  ", wantErr: []string{"names no gate"}},
		{value: "oneOf:", wantErr: []string{"names no gate"}},
		{value: "a,,b", wantErr: []string{"gate 2 is empty", "remove the extra comma"}},
		{value: "a, b,", wantErr: []string{"gate 3 is empty"}},
		{value: "a, b, a", wantErr: []string{`"a" is listed twice (gates 1 and 3)`}},
		{value: "Sre-approval", wantErr: []string{`gate 1 "Sre-approval" is not a gate reference`, "lower case"}},
		{value: "sre approval", wantErr: []string{`"sre approval" is not a gate reference`}},
		{value: "-a", wantErr: []string{`"-a" is not a gate reference`}},
		{value: "ns.x/a", wantErr: []string{`"ns.x/a" is not a gate reference`}},
		{value: "a/b/c", wantErr: []string{`"a/b/c" is not a gate reference`}},
		{value: "a, " + long, wantErr: []string{"gate 2", "is 318 characters long: at most 317", `"` + strings.Repeat("a", 40) + `"…`}},
		{value: strings.Join(many, ","), wantErr: []string{"names 65 gates: at most 64"}},
		{value: "oneof: a", wantErr: []string{`requirement "oneof" is misspelled`, `"oneOf"`}},
		{value: "any: a", wantErr: []string{`unknown requirement "any"`, `"all"`, `"oneOf"`}},
		{value: "ns:a", wantErr: []string{`unknown requirement "ns"`}},
		{value: "oneOf: a, all: b", wantErr: []string{`gate 2 "all: b" contains ':'`}},
		{value: strings.Repeat("x", 500) + ": a", wantErr: []string{`unknown requirement "` + strings.Repeat("x", 40) + `"…`}},
	} {
		got, err := gatesapi.ParseGatesAnnotation(tc.value)
		if tc.wantErr != nil {
			if err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", tc.value, got)
				continue
			}
			for _, part := range tc.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Parse(%q) error %q does not contain %q", tc.value, err, part)
				}
			}
			if len(err.Error()) > 400 {
				t.Errorf("Parse(%q) error is %d bytes long", tc.value, len(err.Error()))
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.value, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.value, got, tc.want)
		}
	}
}

func TestFormatGatesAnnotation(t *testing.T) {
	for _, tc := range []struct {
		gates *gatesapi.Gates
		want  string
	}{
		{nil, ""},
		{&gatesapi.Gates{Refs: []string{"a", "ns/b"}}, "a, ns/b"},
		{&gatesapi.Gates{Require: "all", Refs: []string{"a"}}, "a"},
		{&gatesapi.Gates{Require: "oneOf", Refs: []string{"sre-approval", "bypass"}}, "oneOf: sre-approval, bypass"},
	} {
		if got := gatesapi.FormatGatesAnnotation(tc.gates); got != tc.want {
			t.Errorf("Format(%+v) = %q, want %q", tc.gates, got, tc.want)
		}
	}
}

// FuzzParseGatesAnnotation: parsing never panics, an accepted value keeps the CRD's limits, and
// Parse(Format(Parse(x))) is Parse(x); a rejected value's message stays bounded.
func FuzzParseGatesAnnotation(f *testing.F) {
	for _, seed := range []string{
		"sre-approval, qa-approval", "oneOf: sre-approval, bypass", "all:a", "ns/a,ns/b",
		"", ",", "a,,b", "a, a", "oneof: a", "x: y: z", "A", "a/b/c", "\u00e9", " oneOf :\n a ,\tb ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		g, err := gatesapi.ParseGatesAnnotation(value)
		if err != nil {
			// The fixed text of the longest message, plus two quoted parts of at most 40 runes
			// (each rune at most 4 bytes in UTF-8, up to 10 bytes as a %q escape).
			if n := len(err.Error()); n > 700 {
				t.Fatalf("error of %d bytes for %q: %v", n, value, err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error is not valid UTF-8: %q", err)
			}
			return
		}
		if len(g.Refs) == 0 || len(g.Refs) > 64 || (g.Require != gatesapi.RequireAll && g.Require != gatesapi.RequireOneOf) {
			t.Fatalf("Parse(%q) = %+v: outside the CRD's limits", value, g)
		}
		formatted := gatesapi.FormatGatesAnnotation(g)
		again, err := gatesapi.ParseGatesAnnotation(formatted)
		if err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = Parse(%q): %v", value, formatted, err)
		}
		if !reflect.DeepEqual(g, again) {
			t.Fatalf("Parse(%q) = %+v but Parse(Format(...)) = %+v", value, g, again)
		}
		if f2 := gatesapi.FormatGatesAnnotation(again); f2 != formatted {
			t.Fatalf("Format is not stable: %q then %q", formatted, f2)
		}
	})
}
