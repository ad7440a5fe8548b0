package templatebudget

import (
	"fmt"
	"text/template"
)

// Funcs are the functions of a template set, with what the meter must know of them. Build one
// once: every Budget meters its own copies (Budget.FuncMap).
type Funcs struct {
	// Map holds the functions. Parse with it (plus any placeholder the caller binds itself), so
	// that templates call no other function.
	Map template.FuncMap

	// Accessors return one of their arguments or a part of one: they make nothing new, so their
	// results are neither checked nor counted (a get on a large input is no cost).
	Accessors map[string]bool

	// Serializers print or encode their arguments, so their cost follows what the arguments
	// hold, not what they are: a list made of the same map twice prints it twice, a map set to
	// hold itself prints forever. Their arguments are checked against MaxValueSize before they
	// run. The Printers are serializers without being named here.
	Serializers map[string]bool
}

// Printers returns text/template's builtins that print their arguments, to be put in a Funcs'
// Map (a function of the map takes precedence over a builtin of the same name), so that they
// are metered too: printf bounded by Printf, print, println, html, js and urlquery.
func Printers() template.FuncMap {
	return template.FuncMap{
		"printf":   Printf,
		"print":    fmt.Sprint,
		"println":  fmt.Sprintln,
		"html":     template.HTMLEscaper,
		"js":       template.JSEscaper,
		"urlquery": template.URLQueryEscaper,
	}
}

// printers are the names of Printers.
var printers = map[string]bool{"printf": true, "print": true, "println": true, "html": true, "js": true, "urlquery": true}

func (f *Funcs) serializer(name string) bool {
	return f.Serializers[name] || printers[name]
}
