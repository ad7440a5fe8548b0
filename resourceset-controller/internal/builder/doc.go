// Package builder is the template engine of the ResourceSet API: it turns the
// resources and resourcesTemplate of a ResourceSet plus a list of input sets
// into the Kubernetes objects to apply.
//
// It is pure on purpose (no Kubernetes client, no API types) so the controller,
// the CLI and the tests render exactly the same objects, and so that rendering
// can be benchmarked in isolation.
//
// Templates are Go text/template with << >> delimiters (so ResourceSets can be
// embedded in Helm charts), missingkey=error, the hermetic slim-sprig functions
// plus toYaml, slugify and bool, and the current input set reached through the
// inputs function (<< inputs.tenant >>).
//
// A resources entry is a JSON object whose strings may be templates. Each such
// string is parsed once, as its own template named after its path
// (resources[1].spec.values.replicaCount), and rendered per input:
//
//   - a string that is one action or one control block and nothing else
//     ("<< inputs.replicas | int >>", "<< if ... >>a<< else >>b<< end >>") is a
//     typed value: its output is read as YAML, so | int gives a number, | quote
//     a string and | toYaml | nindent a nested map;
//   - any other string ("podinfo-<< inputs.tenant >>") stays a string, whatever
//     the input contains, so input values cannot inject YAML.
//
// The resourcesTemplate is one multi-document YAML template, rendered per input
// and then split into documents.
//
// A build stays within the limits of limits.go (docs/resourceset.md, "Limits"):
// the functions whose cost grows with an argument are replaced by bounded ones
// (sequences.go, strings.go, and printf from shared/templatebudget), and the
// templates run under a templatebudget.Budget: every function is metered per
// build, parsed templates get checks at loops, template calls and prints, and
// output goes through a limited writer. The build's context is looked at
// wherever text/template gives control back.
package builder
