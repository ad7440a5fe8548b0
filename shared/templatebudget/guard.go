package templatebudget

import (
	"reflect"
	"text/template"
	"text/template/parse"
)

// The functions of the commands Guard adds. They are bound per execution (Budget.FuncMap) and
// are not in the parse-time function map, so no template can call them; errors read "error
// calling range: a loop of 300000000 iterations takes the build over the limit of 10000000 loop
// iterations".
const (
	rangeFunc    = "range"
	templateFunc = "template"
	outputFunc   = "output"
)

// Guard adds the budget's checks to every template of a set parsed with funcs, once, where
// text/template would otherwise run without giving control back:
//   - every range gets range (the loop's iterations) as the last command of its pipeline: the
//     iterations of each loop are counted before it starts, nested loops each time they start,
//     and the deadline is looked at, also for loops that print nothing;
//   - every template call is preceded by an action calling template, so recursion is counted
//     too;
//   - every action that prints gets output (a check of the printed value) as its last command,
//     unless that command is a function returning a string, number or boolean: fmt builds the
//     text of a map or list in memory before the limited writer sees it.
//
// Execute a guarded set only with the functions of a Budget.FuncMap.
func Guard(set *template.Template, funcs *Funcs) {
	for _, t := range set.Templates() {
		if t.Tree != nil && t.Tree.Root != nil {
			guardList(t.Tree, t.Tree.Root, funcs.Map)
		}
	}
}

func guardList(tree *parse.Tree, list *parse.ListNode, funcs template.FuncMap) {
	if list == nil {
		return
	}
	nodes := make([]parse.Node, 0, len(list.Nodes))
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			guardOutput(tree, n, funcs)
		case *parse.IfNode:
			guardList(tree, n.List, funcs)
			guardList(tree, n.ElseList, funcs)
		case *parse.WithNode:
			guardList(tree, n.List, funcs)
			guardList(tree, n.ElseList, funcs)
		case *parse.RangeNode:
			guardList(tree, n.List, funcs)
			guardList(tree, n.ElseList, funcs)
			if n.Pipe != nil {
				n.Pipe.Cmds = append(n.Pipe.Cmds, command(tree, n.Position(), rangeFunc))
			}
		case *parse.TemplateNode:
			nodes = append(nodes, callAction(tree, n.Position(), templateFunc))
		}
		nodes = append(nodes, n)
	}
	list.Nodes = nodes
}

func guardOutput(tree *parse.Tree, a *parse.ActionNode, funcs template.FuncMap) {
	if a.Pipe == nil || len(a.Pipe.Decl) > 0 || len(a.Pipe.Cmds) == 0 {
		return // a declaration or an assignment prints nothing
	}
	if returnsScalar(a.Pipe.Cmds[len(a.Pipe.Cmds)-1], funcs) {
		return
	}
	a.Pipe.Cmds = append(a.Pipe.Cmds, command(tree, a.Position(), outputFunc))
}

// scalarBuiltins are the text/template builtins that return a boolean or a number.
var scalarBuiltins = map[string]bool{"len": true, "not": true, "eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}

// returnsScalar reports whether a command calls a function whose result prints as it is.
func returnsScalar(cmd *parse.CommandNode, funcs template.FuncMap) bool {
	if len(cmd.Args) == 0 {
		return false
	}
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	if !ok {
		return false
	}
	if scalarBuiltins[id.Ident] {
		return true
	}
	fn, ok := funcs[id.Ident]
	if !ok {
		return false
	}
	switch reflect.TypeOf(fn).Out(0).Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return true
	}
	return false
}

// callVariable holds what the added actions return. It cannot be written in a template (it has
// a space), so it shadows nothing; declaring it is cheaper than printing "".
const callVariable = "$ call"

// callAction is the action {{ $call := name }}, at pos.
func callAction(tree *parse.Tree, pos parse.Pos, name string) *parse.ActionNode {
	variable := &parse.VariableNode{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{callVariable}}
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Decl: []*parse.VariableNode{variable},
		Cmds: []*parse.CommandNode{command(tree, pos, name)}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: pipe}
}

// command calls the function name, with the value of the pipeline so far as its argument.
func command(tree *parse.Tree, pos parse.Pos, name string) *parse.CommandNode {
	id := parse.NewIdentifier(name).SetTree(tree).SetPos(pos)
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}
}
