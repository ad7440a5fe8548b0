package builder

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// renderText renders a template as a string field of a resources entry ("=" before it keeps it
// a string) and returns the text, or the build error.
func renderText(ctx context.Context, t *testing.T, text string) (string, error) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"},
		"data": map[string]any{"value": "=" + text},
	})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Parse([][]byte{raw}, "")
	if err != nil {
		t.Fatal(err)
	}
	objects, err := tmpl.Build(ctx, []Input{{}}, nil)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(objects[0].Object["data"].(map[string]any)["value"].(string), "="), nil
}

// TestFunctionLimits: the template functions whose cost grows with an argument refuse arguments
// over their limit, naming the function and the limit, before they allocate; within the limits
// they give slim-sprig's and text/template's results. The same holds for loops, template calls,
// and values that grow by being combined with themselves.
func TestFunctionLimits(t *testing.T) {
	cases := []struct{ name, template, want, err string }{
		// Within the limits: what slim-sprig and text/template give.
		{name: "until", template: `<< until 3 >>|<< until -2 >>|<< until 0 >>`, want: "[0 1 2]|[0 -1]|[]"},
		{name: "untilStep", template: `<< untilStep 1 10 3 >>|<< untilStep 10 1 -4 >>|<< untilStep 10 1 3 >>`, want: "[1 4 7]|[10 6 2]|[]"},
		{name: "untilStep by a step past the largest int", template: `<< untilStep 9223372036854775806 9223372036854775807 10 >>`,
			want: "[9223372036854775806]"},
		{name: "seq", template: `<< seq 3 >>|<< seq 3 1 >>|<< seq 0 2 6 >>|<< seq 6 -2 0 >>|<< seq 1 2 0 >>|<< seq >>`,
			want: "1 2 3|3 2 1|0 2 4 6|6 4 2 0||"},
		{name: "repeat", template: `<< repeat 3 "ab" >>`, want: "ababab"},
		{name: "indent", template: `<< indent 2 "a\nb" >>|<< nindent 1 "c" >>`, want: "  a\n  b|\n c"},
		{name: "replace", template: `<< replace "a" "oo" "banana" >>|<< replace "" "-" "ab" >>`, want: "boonoonoo|-a-b-"},
		{name: "regexReplaceAll", template: `<< regexReplaceAll "a(n)" "banana" "[$1]" >>|<< regexReplaceAllLiteral "a(n)" "banana" "[$1]" >>`,
			want: "b[n][n]a|b[$1][$1]a"},
		{name: "join and split", template: `<< join "," (list "a" 1) >>|<< splitList "," "a,b" >>|<< (split "," "a,b")._1 >>|<< (splitn "," 2 "a,b,c")._1 >>`,
			want: "a,1|[a b]|b|b,c"},
		{name: "printf", template: `<< printf "%5s|%-3d|%.2f|%[1]s|%%" "ab" 7 3.14159 >>|<< printf "%*d|%-*d|%.*s" 3 4 2 5 1 "xy" >>`,
			want: "   ab|7  |3.14|ab|%|  4|5 |x"},
		{name: "uniq", template: `<< uniq (list 1 2 1) >>|<< mustUniq (list "a" "a") >>`, want: "[1 2]|[a]"},
		{name: "range keeps its variables and else", template: `<< range $i, $e := list "a" "b" >><< $i >><< $e >><< end >>|<< range until 0 >>x<< else >>none<< end >>`,
			want: "0a1b|none"},
		{name: "range over an integer with break", template: `<< range $i := 10 >><< if eq $i 3 >><< break >><< end >><< $i >><< end >>`, want: "012"},
		{name: "printing as text/template does", template: `<< index (dict) "missing" >>|<< dict "a" 1 >>|<< list 1 "b" >>`, want: "<no value>|map[a:1]|[1 b]"},
		{name: "recursive template", template: `<< define "down" >><< if gt . 0 >><< . >><< template "down" (sub . 1) >><< end >><< end >><< template "down" 3 >>`,
			want: "321"},
		{name: "set and get", template: `<< $d := dict >><< $_ := set $d "k" "v" >><< get $d "k" >>`, want: "v"},

		// Over the limits.
		{name: "until over", template: `<< until 40000000 >>`, err: "error calling until: 40000000 numbers are over the limit of 1000000"},
		{name: "untilStep over", template: `<< untilStep 0 40000000 1 >>`, err: "error calling untilStep: 40000000 numbers are over the limit of 1000000"},
		{name: "untilStep over the largest int", template: `<< untilStep -9223372036854775808 9223372036854775807 1 >>`,
			err: "error calling untilStep: 18446744073709551615 numbers are over the limit of 1000000"},
		{name: "seq over", template: `<< seq 40000000 >>`, err: "error calling seq: 40000000 numbers are over the limit of 1000000"},
		{name: "repeat count", template: `<< repeat 300000000 "x" >>`, err: "error calling repeat: count 300000000 is over the limit of 1000000"},
		{name: "repeat result", template: `<< repeat 1000000 "abcde" >>`,
			err: "error calling repeat: a result of 5000000 bytes is over the limit of 4 MiB per value"},
		{name: "indent width", template: `<< indent 100000000 "a" >>`, err: "error calling indent: width 100000000 is over the limit of 10000"},
		{name: "nindent width", template: `<< nindent 100000000 "a" >>`, err: "error calling nindent: width 100000000 is over the limit of 10000"},
		{name: "indent result", template: `<< indent 10000 (repeat 1000 "\n") >>`,
			err: "error calling indent: a result of 10011000 bytes is over the limit of 4 MiB per value"},
		{name: "replace result", template: `<< replace "" (repeat 10000 "y") (repeat 1000 "a") >>`,
			err: "error calling replace: a result of 10011000 bytes is over the limit of 4 MiB per value"},
		{name: "regexReplaceAll result", template: `<< regexReplaceAll "a" (repeat 100000 "a") (repeat 100 "b") >>`,
			err: "error calling regexReplaceAll: a result of 10000000 bytes is over the limit of 4 MiB per value"},
		{name: "regexReplaceAll result with $", template: `<< mustRegexReplaceAll "a" (repeat 1000000 "a") "$0$0$0$0$0" >>`,
			err: "error calling mustRegexReplaceAll: a result of 15000000 bytes is over the limit of 4 MiB per value"},
		{name: "regexReplaceAllLiteral result", template: `<< regexReplaceAllLiteral "a" (repeat 100000 "a") (repeat 100 "b") >>`,
			err: "error calling regexReplaceAllLiteral: a result of 10000000 bytes is over the limit of 4 MiB per value"},
		{name: "join separator", template: `<< join (repeat 100000 "-") (until 100) >>`,
			err: "error calling join: a result of 9900000 bytes is over the limit of 4 MiB per value"},
		{name: "splitList pieces", template: `<< splitList "" (repeat 1000000 "a") >>`,
			err: "error calling splitList: a result of 25000048 bytes is over the limit of 4 MiB per value"},
		{name: "split pieces", template: `<< split "," (repeat 1000000 ",") >>`,
			err: "error calling split: a result of 25000024 bytes is over the limit of 4 MiB per value"},
		{name: "printf width", template: `<< printf "%100000000d" 1 >>`, err: "error calling printf: width or precision 100000000 is over the limit of 10000"},
		{name: "printf precision", template: `<< printf "%.100000000f" 1.5 >>`, err: "error calling printf: width or precision 100000000 is over the limit of 10000"},
		{name: "printf * width", template: `<< printf "%*d" 100000000 1 >>`, err: "error calling printf: width or precision 100000000 is over the limit of 10000"},
		{name: "printf repeating an argument", template: `<< printf "%[1]s%[1]s%[1]s%[1]s%[1]s" (repeat 1000000 "y") >>`,
			err: "error calling printf: a result of 5000025 bytes is over the limit of 4 MiB per value"},
		{name: "uniq", template: `<< uniq (until 20000) >>`, err: "error calling uniq: a list of 20000 items is over the limit of 10000"},

		// Values grown by combining them with themselves: each step is small, the result is not.
		{name: "a string doubled in a loop", template: `<< $s := "ab" >><< range until 24 >><< $s = cat $s $s >><< end >>`,
			err: "error calling cat: the arguments are over the limit of 4 MiB per value"},
		{name: "a list holding itself twice", template: `<< $l := list 1 >><< range until 40 >><< $l = list $l $l >><< end >><< len $l >>`,
			err: "error calling list: the result is over the limit of 4 MiB per value"},
		{name: "a map holding itself, serialized", template: `<< $d := dict >><< $_ := set $d "self" $d >><< toJson $d >>`,
			err: "error calling toJson: the arguments are over the limit of 4 MiB per value"},
		{name: "a map holding itself, printed", template: `<< $d := dict >><< $_ := set $d "self" $d >><< $d >>`,
			err: "error calling output: the printed value is over the limit of 4 MiB per value"},
		{name: "results piling up", template: `<< range $i := 100 >><< $x := repeat 1000000 "yyyy" >><< end >>`,
			err: "error calling repeat: the results of template functions are over the limit of 256 MiB per build"},

		// Loops and template calls.
		{name: "a loop over a large integer", template: `<< range 300000000 >><< end >>`,
			err: "error calling range: a loop of 300000000 iterations takes the build over the limit of 10000000 loop iterations"},
		{name: "nested loops", template: `<< range until 4000 >><< range until 4000 >><< end >><< end >>`,
			err: "error calling range: a loop of 4000 iterations takes the build over the limit of 10000000 loop iterations"},
		{name: "a template calling itself twice", template: `<< define "t" >><< if gt . 0 >><< template "t" (sub . 1) >><< template "t" (sub . 1) >><< end >><< end >><< template "t" 40 >>`,
			err: "error calling template: a template call takes the build over the limit of 1000000 template calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := renderText(t.Context(), t, tc.template)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestRenderedSizeLimit: what a build renders, the output of its templates and the static parts
// of its resources copied for every input, stops at MaxRenderedSize, before the memory is used.
func TestRenderedSizeLimit(t *testing.T) {
	t.Run("resourcesTemplate", func(t *testing.T) {
		g := NewWithT(t)
		// 80 ConfigMaps of 1 MB each.
		tmpl, err := Parse(nil, `<< range $i := 80 >>
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-<< $i >>
data:
  value: << repeat 1000000 "x" >>
<< end >>`)
		g.Expect(err).NotTo(HaveOccurred())
		objects, err := tmpl.Build(t.Context(), []Input{{}}, nil)
		g.Expect(err).To(MatchError("inputs[0]: the rendered output is over the limit of 64 MiB per build"))
		g.Expect(objects).To(BeNil())
	})
	t.Run("resources", func(t *testing.T) {
		g := NewWithT(t)
		// A static 1 MB string copied for each of 80 inputs.
		raw, err := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm-<< inputs.i >>"},
			"data": map[string]any{"value": strings.Repeat("x", 1000000)},
		})
		g.Expect(err).NotTo(HaveOccurred())
		tmpl, err := Parse([][]byte{raw}, "")
		g.Expect(err).NotTo(HaveOccurred())
		inputs := make([]Input, 80)
		for i := range inputs {
			inputs[i] = Input{"i": int64(i)}
		}
		objects, err := tmpl.Build(t.Context(), inputs, nil)
		g.Expect(err).To(MatchError(HaveSuffix(": the rendered output is over the limit of 64 MiB per build")))
		g.Expect(objects).To(BeNil())

		// Below the limit the same entry renders.
		objects, err = tmpl.Build(t.Context(), inputs[:60], nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objects).To(HaveLen(60))
	})
}
