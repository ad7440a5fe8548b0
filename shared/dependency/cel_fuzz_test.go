package dependency

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/ast"
)

// fuzzSecrets are what FuzzCompile's Secret holds in its data, stringData and
// last-applied-configuration annotation: strings no expression would write by chance.
var fuzzSecrets = []string{"cXV4LTkxNy16eWd5", "qux-917-zygy", "w0mbat-Plinth-55"}

// FuzzCompile compiles fuzzed readyExpr expressions. Every identifier an expression reads is
// found by the scan for free identifiers (freeIdents), so an expression that parses never fails
// its type check on an undeclared identifier; and evaluating a compiled expression against a
// Secret of another namespace stops within its cost limit and never shows the Secret's data,
// annotations or managed fields in its verdict.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		gateExpr,
		"metadata.generation == status.observedGeneration",
		"rules.exists(r, r.verbs.exists(v, v == 'get' && r.apiGroups.size() > 0))",
		"[1, 2].all(x, x > 0) && x == 1",
		"webhooks.map(w, w.name).exists(n, n == self.metadata.name)",
		"{'a': subsets}.a.size() > 0 && [secrets].size() == 1",
		"'x'.upperAscii() == provisioner && int(priority) > 0",
		"!has(status.observedGeneration) && status.?phase.orValue('none') == 'none'",
		"base64.decodeAll(data.gate) == b'x'",
		"has(data.gate) && size(self.data) > 0",
		"has(metadata.annotations) || has(metadata.managedFields) || has(self.metadata.annotations)",
		"self.type == 'Opaque' && metadata.name == 'my-gate' && kind == 'Secret'",
		"size(data) == 'one'",
		"string(base64.decode(data.gate) == 'opened'",
		"metadata.generation == status.observedGeneration &&\nstatus.controlPlaneReady == true\n",
		"type == 'Opaque'",
		"int == type(1) && google.protobuf.Timestamp{} != null",
		"optional.of(spec).hasValue() && [?optional.none()] == []",
		"[1,2,3].map(x, [1,2,3].map(y, [1,2,3].filter(z, x + y + z > x)))",
		"self.metadata.annotations.exists(k, k.startsWith('kubectl'))",
		"string(self)",
		"x.y.z()",
		"unknownFunction(1)",
		"[0].all(x, [1].exists(x, x == 1) && x == 0) && x.y",
		".status.phase == 'Ready' && [1].all(x, .x > 0) && .base64.decode(.data.gate) == b''",
		"dyn(stringData).token.size() > 0",
		"spec.replicas / 0 == 1",
	} {
		f.Add(s)
	}
	cache := newCache(64)
	object := map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "Opaque",
		"metadata": map[string]any{
			"name": "gate", "namespace": "other",
			"annotations":   map[string]any{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"token":"` + fuzzSecrets[2] + `"}}`},
			"managedFields": []any{map[string]any{"manager": "kubectl", "fieldsV1": map[string]any{"f:data": map[string]any{"f:" + fuzzSecrets[1]: map[string]any{}}}}},
		},
		"data":       map[string]any{"gate": fuzzSecrets[0]},
		"stringData": map[string]any{"token": fuzzSecrets[2]},
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if len(expr) > 1024 {
			return
		}
		parsed, iss := cache.env.Parse(expr)
		if iss.Err() != nil {
			return
		}
		e := cache.get(expr)
		if e.err != nil {
			for name := range identifiers(parsed.NativeRep().Expr()) {
				if strings.Contains(e.err.Detail, fmt.Sprintf("undeclared reference to '%s'", name)) {
					t.Fatalf("%q: the scan missed the identifier %q: %s", expr, name, e.err.Detail)
				}
			}
			return
		}
		for _, s := range fuzzSecrets {
			if strings.Contains(expr, s) {
				return // the expression writes the secret itself
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := evaluate(ctx, (&Checker{}).words(), "other/gate", object, e, true)
		if ctx.Err() != nil {
			t.Fatalf("%q: the evaluation ran for %s", expr, time.Since(start))
		}
		if err != nil {
			for _, s := range fuzzSecrets {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("%q: the verdict shows hidden data: %v", expr, err)
				}
			}
		}
	})
}

// identifiers returns the plain identifiers an expression mentions anywhere, bound or free,
// less the names it also calls as functions (CEL reports an unknown function as an undeclared
// reference too).
func identifiers(root ast.Expr) map[string]bool {
	idents, calls := map[string]bool{}, map[string]bool{}
	var walk func(e ast.Expr)
	walk = func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			idents[e.AsIdent()] = true
		case ast.SelectKind:
			walk(e.AsSelect().Operand())
		case ast.CallKind:
			call := e.AsCall()
			calls[call.FunctionName()] = true
			if call.IsMemberFunction() {
				walk(call.Target())
			}
			for _, arg := range call.Args() {
				walk(arg)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el)
			}
		case ast.MapKind:
			for _, entry := range e.AsMap().Entries() {
				walk(entry.AsMapEntry().Key())
				walk(entry.AsMapEntry().Value())
			}
		case ast.StructKind:
			for _, field := range e.AsStruct().Fields() {
				walk(field.AsStructField().Value())
			}
		case ast.ComprehensionKind:
			comp := e.AsComprehension()
			for _, sub := range []ast.Expr{comp.IterRange(), comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
				walk(sub)
			}
		}
	}
	walk(root)
	for name := range calls {
		delete(idents, name)
	}
	return idents
}
