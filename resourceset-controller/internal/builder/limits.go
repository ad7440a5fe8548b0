package builder

import "github.com/sluice-gitops/sluice/shared/templatebudget"

// The limits of one build (docs/resourceset.md, "Limits"). Templates come from the users of a
// cluster and run inside the controller, so whatever a template asks for is bounded: every
// ResourceSet shares the controller's memory and CPU with all the others. The values are far
// above what a ResourceSet can apply: the API server stores no object over 1.5 MiB, and a build
// of tens of megabytes already takes longer to apply than the default timeout of five minutes.
const (
	// MaxCount bounds the count of repeat and the numbers of until, untilStep and seq: a loop
	// over a million numbers renders far more objects than one ResourceSet can apply.
	MaxCount = 1_000_000

	// MaxWidth bounds the padding a function adds (indent, nindent, printf widths and
	// precisions): no YAML document is nested that deep nor a column that wide.
	MaxWidth = templatebudget.MaxWidth

	// MaxUniqItems bounds the list uniq reads: it compares every item with every item kept.
	MaxUniqItems = 10_000

	// MaxValueSize bounds one value a template function returns or an action prints, as
	// templatebudget.SizeOf counts it, and the values a function serializes (toYaml, toJson,
	// join, printf...): more than twice the largest object the API server stores, so no value
	// an object can hold is refused.
	MaxValueSize = templatebudget.MaxValueSize

	// MaxResultsSize bounds the values the template functions of one build return, summed (a
	// function that returns one of its arguments adds nothing): a loop cannot pile up copies
	// of MaxValueSize values.
	MaxResultsSize = 256 << 20

	// MaxRenderedSize bounds what a build renders: the output of every template plus the
	// static parts of spec.resources copied for each input.
	MaxRenderedSize = 64 << 20

	// MaxIterations bounds the loop iterations (range) of one build, counted when each loop
	// starts: nested loops otherwise multiply without bound. Ten thousand inputs each looping
	// over a thousand items stay within it.
	MaxIterations = 10_000_000

	// MaxTemplateCalls bounds the template calls (template, block) of one build: a template
	// calling itself twice doubles the work at each level. A call costs a microsecond or two,
	// so a runaway recursion stops within seconds; ten thousand inputs may call a hundred
	// templates each.
	MaxTemplateCalls = 1_000_000
)

// limits is the budget of one Build: one budget for all its inputs.
var limits = templatebudget.Limits{
	Unit:          "build",
	RenderedSize:  MaxRenderedSize,
	ResultsSize:   MaxResultsSize,
	Iterations:    MaxIterations,
	TemplateCalls: MaxTemplateCalls,
}
