package dependency

import (
	"container/list"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
)

// How readyExpr sees the object
//
// The expression is evaluated with every top-level field of the object as a variable (apiVersion,
// kind, metadata, spec, status, data, rules, webhooks, ...), plus `self`, the whole object. CEL
// needs variables declared before type checking, and the cache is keyed by expression text alone
// (not by kind), so the declarations come from the expression itself: Compile parses it, collects
// its free identifiers (names not bound by a comprehension and not the namespace of a function
// such as base64.decode) and declares each as dyn, next to the always-declared names below. Any
// top-level field therefore works, on any kind.
//
// At evaluation, metadata, spec, status, data, stringData and binaryData are bound to an empty map
// when the object lacks them, so `has(status.observedGeneration)` is false rather than an error.
// Other names the object lacks stay unbound and reading them fails with "no such attribute(s)",
// which is a run-time error (NotReady): the object may get the field later. The price of this
// choice is that a misspelt top-level name (`stauts`) is reported when evaluated, not when compiled.
//
// A field whose name is a CEL type or reserved word (a Secret's `type`) cannot be a variable; read
// it through self: `self.type == 'kubernetes.io/tls'`.

const (
	// DefaultCacheSize is the number of compiled expressions a Cache keeps (least recently used
	// first out).
	DefaultCacheSize = 1000
	// CostLimit bounds the run-time cost of one evaluation, so an expression cannot spin (e.g. a
	// nested comprehension over a big list). It is enough for readiness checks (a simple
	// comprehension over about 1,500 conditions or list items), and far below Kubernetes'
	// 1,000,000 for validation rules because cel-go v0.26's cost tracker takes time quadratic in
	// the number of comprehension iterations: at 10,000 the worst expressions we found stop
	// within 15-40 ms, at 100,000 within ~2 s, at 1,000,000 they would run for minutes
	// (BenchmarkHostileExpression).
	CostLimit = 10_000
	// MaxExprLength bounds the length of an expression in code points, which bounds the memory a
	// full cache holds.
	MaxExprLength = 16 * 1024
	// interruptCheckFrequency is the number of comprehension iterations between checks of the
	// evaluation's context.
	interruptCheckFrequency = 100
)

// objectVariables are declared for every expression; the ones in emptyWhenAbsent are bound to an
// empty map when the object lacks them.
var (
	objectVariables = []string{"apiVersion", "kind", "metadata", "spec", "status", "data", "stringData", "binaryData", selfVariable}
	emptyWhenAbsent = []string{"metadata", "spec", "status", "data", "stringData", "binaryData"}
)

// selfVariable is the whole object.
const selfVariable = "self"

// Cache compiles CEL expressions once, keyed by expression text, and is safe for concurrent use.
// It keeps at most DefaultCacheSize programs (and compile errors), evicting the least recently
// used, so a stream of distinct expressions cannot grow memory without limit.
type Cache struct {
	env       *cel.Env
	size      int
	costLimit uint64

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // of *compiled, most recently used first
}

// compiled is a cache entry: a program or the compile error of one expression.
type compiled struct {
	expr    string
	program cel.Program
	err     *CompileError
	// idents are the top-level names the expression reads.
	idents map[string]bool
}

// NewCache returns an empty cache holding up to DefaultCacheSize programs.
func NewCache() *Cache { return newCache(DefaultCacheSize) }

func newCache(size int) *Cache {
	opts := []cel.EnvOption{
		ext.Strings(),
		ext.Encoders(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.ParserExpressionSizeLimit(MaxExprLength),
		cel.EagerlyValidateDeclarations(true),
	}
	for _, name := range objectVariables {
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		// The options are constants: this is a programming error.
		panic("dependency: building the CEL environment: " + err.Error())
	}
	return &Cache{env: env, size: size, costLimit: CostLimit, entries: map[string]*list.Element{}, lru: list.New()}
}

// Len returns the number of expressions cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Compile checks an expression and returns its program, compiled once per expression text. A
// syntax or type error, or a result type other than bool (or dyn, checked at evaluation), returns
// a *CompileError carrying CEL's position text.
func (c *Cache) Compile(expr string) (cel.Program, error) {
	e := c.get(expr)
	if e.err != nil {
		return nil, e.err
	}
	return e.program, nil
}

// get returns the cache entry of an expression, compiling it on a miss. Two goroutines missing at
// once both compile; the first stored entry wins, so every caller gets the same program.
func (c *Cache) get(expr string) *compiled {
	c.mu.Lock()
	if el, ok := c.entries[expr]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*compiled)
	}
	c.mu.Unlock()

	e := c.compile(expr)

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[expr]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*compiled)
	}
	c.entries[expr] = c.lru.PushFront(e)
	for c.lru.Len() > c.size {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*compiled).expr)
	}
	return e
}

func (c *Cache) compile(expr string) *compiled {
	fail := func(iss *cel.Issues) *compiled {
		return &compiled{expr: expr, err: &CompileError{Expr: expr, Detail: iss.String()}}
	}
	parsed, iss := c.env.Parse(expr)
	if iss.Err() != nil {
		return fail(iss)
	}
	idents := freeIdents(c.env, parsed.NativeRep().Expr())
	env := c.env
	var extra []cel.EnvOption
	for _, name := range sortedKeys(idents) {
		if !c.declared(name) {
			extra = append(extra, cel.Variable(name, cel.DynType))
		}
	}
	if len(extra) > 0 {
		var err error
		if env, err = c.env.Extend(extra...); err != nil {
			errs := common.NewErrors(parsed.Source())
			errs.ReportErrorString(common.NoLocation, err.Error())
			return fail(cel.NewIssues(errs))
		}
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return fail(iss)
	}
	if out := checked.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		native := checked.NativeRep()
		iss := cel.NewIssuesWithSourceInfo(common.NewErrors(checked.Source()), native.SourceInfo())
		iss.ReportErrorAtID(native.Expr().ID(), "expression must evaluate to bool, found %s", cel.FormatCELType(out))
		return fail(iss)
	}
	program, err := env.Program(checked,
		cel.CostLimit(c.costLimit),
		cel.InterruptCheckFrequency(interruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		errs := common.NewErrors(checked.Source())
		errs.ReportErrorString(common.NoLocation, err.Error())
		return fail(cel.NewIssues(errs))
	}
	return &compiled{expr: expr, program: program, idents: idents}
}

// declared tells whether the base environment already resolves an identifier: one of the
// object variables, or a type name such as int or type (which cannot be redeclared).
func (c *Cache) declared(name string) bool {
	for _, v := range objectVariables {
		if v == name {
			return true
		}
	}
	_, isType := c.env.CELTypeProvider().FindIdent(name)
	return isType
}

// freeIdents returns the identifiers an expression reads from its environment: identifiers not
// bound by an enclosing comprehension, leaving out the namespace of qualified function calls
// (base64 in base64.decode(x)).
func freeIdents(env *cel.Env, root ast.Expr) map[string]bool {
	out := map[string]bool{}
	var walk func(e ast.Expr, bound map[string]bool)
	walk = func(e ast.Expr, bound map[string]bool) {
		switch e.Kind() {
		case ast.IdentKind:
			// A leading dot (".status") names the same identifier, looked up from the root
			// scope: the variable to declare is "status".
			if name := strings.TrimPrefix(e.AsIdent(), "."); !bound[name] {
				out[name] = true
			}
		case ast.SelectKind:
			walk(e.AsSelect().Operand(), bound)
		case ast.CallKind:
			call := e.AsCall()
			if call.IsMemberFunction() {
				if q, ok := qualifiedName(call.Target()); !ok || !env.HasFunction(strings.TrimPrefix(q, ".")+"."+call.FunctionName()) {
					walk(call.Target(), bound)
				}
			}
			for _, arg := range call.Args() {
				walk(arg, bound)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, bound)
			}
		case ast.MapKind:
			for _, entry := range e.AsMap().Entries() {
				me := entry.AsMapEntry()
				walk(me.Key(), bound)
				walk(me.Value(), bound)
			}
		case ast.StructKind:
			for _, field := range e.AsStruct().Fields() {
				walk(field.AsStructField().Value(), bound)
			}
		case ast.ComprehensionKind:
			comp := e.AsComprehension()
			walk(comp.IterRange(), bound)
			walk(comp.AccuInit(), bound)
			inner := make(map[string]bool, len(bound)+3)
			for k := range bound {
				inner[k] = true
			}
			inner[comp.AccuVar()] = true
			walk(comp.Result(), inner)
			inner[comp.IterVar()] = true
			if comp.HasIterVar2() {
				inner[comp.IterVar2()] = true
			}
			walk(comp.LoopCondition(), inner)
			walk(comp.LoopStep(), inner)
		}
	}
	walk(root, map[string]bool{})
	return out
}

// qualifiedName returns "a.b.c" for the expression a.b.c made of identifiers and selections.
func qualifiedName(e ast.Expr) (string, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent(), true
	case ast.SelectKind:
		sel := e.AsSelect()
		if sel.IsTestOnly() {
			return "", false
		}
		prefix, ok := qualifiedName(sel.Operand())
		return prefix + "." + sel.FieldName(), ok
	}
	return "", false
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
