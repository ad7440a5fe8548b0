// Package templatebudget runs untrusted Go text/templates inside a controller with a budget:
// templates come from the users of a cluster, and a few bytes of template can otherwise take the
// controller's memory ({{ printf "%100000000d" 1 }}) or hold a worker forever (nested ranges over
// large integers).
//
// A template set is parsed with the functions of a Funcs (whose printing builtins are replaced by
// Printers), then Guard adds checks at its loops, template calls and prints, once. Each execution
// gets a Budget: its FuncMap meters every function (the deadline, the size of what it returns,
// the arguments of those that print them), and its Writer refuses output over the limit before
// memory grows. The limits are those of a Limits, plus MaxValueSize and MaxWidth, which bound one
// value or one padding whatever the template. text/template cannot be interrupted, so the
// budget looks at its context wherever text/template gives control back.
package templatebudget
