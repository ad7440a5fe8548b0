package templatebudget_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"text/template"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

var testLimits = templatebudget.Limits{Unit: "test", RenderedSize: 1 << 10, ResultsSize: 16 << 20, Iterations: 1000, TemplateCalls: 10}

// testFuncs are text/template's builtins, the printing ones metered, and one function of
// another signature than the fast paths'.
var testFuncs = &templatebudget.Funcs{Map: func() template.FuncMap {
	fm := templatebudget.Printers()
	fm["pair"] = func(a, b any) []any { return []any{a, b} }
	return fm
}()}

// execute parses text with the {{ }} delimiters, guards it and runs it with a new budget.
func execute(ctx context.Context, text string, data any) (string, error) {
	tmpl, err := template.New("t").Option("missingkey=error").Funcs(testFuncs.Map).Parse(text)
	if err != nil {
		return "", err
	}
	templatebudget.Guard(tmpl, testFuncs)
	b := templatebudget.New(ctx, testLimits)
	var buf bytes.Buffer
	err = tmpl.Funcs(b.FuncMap(testFuncs)).Execute(b.Writer(&buf), data)
	return buf.String(), err
}

// TestBudget: a template of the {{ }} kind, with only text/template's builtins, runs as it
// would without a budget within the limits, and stops at each limit with a *LimitError naming
// it, before it allocates: the builtins that print are bounded as the others are.
func TestBudget(t *testing.T) {
	data := map[string]any{"name": "podinfo", "tags": []string{"a", "b"}}
	cases := []struct{ name, template, want, err string }{
		{name: "fields, loops and printing", template: `{{ .name }}:{{ range $i, $t := .tags }}{{ if $i }},{{ end }}{{ $t }}{{ end }} {{ printf "%5s|%-3d" "ab" 7 }} {{ len .tags }} {{ pair 1 2 }}`,
			want: "podinfo:a,b    ab|7   2 [1 2]"},
		{name: "a template called", template: `{{ define "x" }}<{{ . }}>{{ end }}{{ template "x" .name }}`, want: "<podinfo>"},

		{name: "a loop over a large integer", template: `{{ range 2000000000 }}x{{ end }}`,
			err: "error calling range: a loop of 2000000000 iterations takes the test over the limit of 1000 loop iterations"},
		{name: "nested loops", template: `{{ range 1000 }}{{ range 1000 }}{{ end }}{{ end }}`,
			err: "error calling range: a loop of 1000 iterations takes the test over the limit of 1000 loop iterations"},
		{name: "recursion", template: `{{ define "r" }}{{ template "r" . }}{{ template "r" . }}{{ end }}{{ template "r" . }}`,
			err: "error calling template: a template call takes the test over the limit of 10 template calls"},
		{name: "output", template: `{{ range 200 }}0123456789{{ end }}`, err: "the rendered output is over the limit of 1 KiB per test"},
		{name: "printf width", template: `{{ printf "%100000000d" 1 }}`, err: "error calling printf: width or precision 100000000 is over the limit of 10000"},
		{name: "a value doubled in a loop", template: `{{ $s := "ab" }}{{ range 30 }}{{ $s = print $s $s }}{{ end }}`,
			err: "error calling print: the arguments are over the limit of 4 MiB per value"},
		{name: "a list of itself", template: `{{ $l := pair 1 2 }}{{ range 40 }}{{ $l = pair $l $l }}{{ end }}`,
			err: "error calling pair: the result is over the limit of 4 MiB per value"},
		{name: "results piling up", template: `{{ $s := printf "%10000s" "" }}{{ range 7 }}{{ $s = print $s $s }}{{ end }}{{ range 20 }}{{ $x := print $s }}{{ end }}`,
			err: "error calling print: the results of template functions are over the limit of 16 MiB per test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := execute(t.Context(), tc.template, data)
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tc.want))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			var limit *templatebudget.LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "a *LimitError: %v", err)
		})
	}
}

// TestBudgetDeadline: a loop within the limits that prints stops soon after the context is
// done, with an error that wraps the context's.
func TestBudgetDeadline(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	tmpl, err := template.New("t").Funcs(testFuncs.Map).Parse(`{{ range 900 }}{{ range 900 }}{{ print "" }}{{ end }}{{ end }}`)
	g.Expect(err).NotTo(HaveOccurred())
	templatebudget.Guard(tmpl, testFuncs)
	b := templatebudget.New(ctx, templatebudget.Limits{Unit: "test", RenderedSize: 1 << 20, ResultsSize: 1 << 20, Iterations: 1 << 40, TemplateCalls: 1})
	<-ctx.Done()
	var buf bytes.Buffer
	err = tmpl.Funcs(b.FuncMap(testFuncs)).Execute(b.Writer(&buf), nil)
	g.Expect(err).To(MatchError(ContainSubstring("test interrupted: context deadline exceeded")))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue())
}
