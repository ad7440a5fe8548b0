package builder

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	sprig "github.com/go-task/slim-sprig/v3"

	"github.com/sluice-gitops/sluice/shared/templatebudget"
)

// The slim-sprig string functions whose result can be much larger than their arguments. Each
// computes the size of its result first and refuses one over MaxValueSize (slim-sprig's repeat
// 300000000 allocated 286 MiB in one call), with the same results otherwise.

// errResult is the error of a result that would be over MaxValueSize.
var errResult = templatebudget.ResultOverLimit

func repeat(count int, s string) (string, error) {
	switch {
	case count > MaxCount:
		return "", fmt.Errorf("count %d is over the limit of %d", count, MaxCount)
	case count < 0:
		return "", fmt.Errorf("negative count %d", count)
	case count*len(s) > MaxValueSize:
		return "", errResult(count * len(s))
	}
	return strings.Repeat(s, count), nil
}

func indent(width int, s string) (string, error) {
	switch {
	case width > MaxWidth:
		return "", fmt.Errorf("width %d is over the limit of %d", width, MaxWidth)
	case width < 0:
		return "", fmt.Errorf("negative width %d", width)
	}
	if size := len(s) + width*(strings.Count(s, "\n")+1); size > MaxValueSize {
		return "", errResult(size)
	}
	pad := strings.Repeat(" ", width)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

func nindent(width int, s string) (string, error) {
	out, err := indent(width, s)
	return "\n" + out, err
}

func replace(old, new, s string) (string, error) {
	// strings.Count of "" is the number of places Replace inserts at.
	if size := len(s) + strings.Count(s, old)*(len(new)-len(old)); size > MaxValueSize {
		return "", errResult(size)
	}
	return strings.ReplaceAll(s, old, new), nil
}

var sprigJoin = sprig.GenericFuncMap()["join"].(func(string, any) string)

// join's separator is repeated between every two items. The items themselves are checked as
// the arguments of a serializer (metered.go).
func join(sep string, list any) (string, error) {
	v := reflect.ValueOf(list)
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Len() > 1 {
		if size := (v.Len() - 1) * len(sep); size > MaxValueSize {
			return "", errResult(size)
		}
	}
	return sprigJoin(sep, list), nil
}

// regexReplaceAll returns the four slim-sprig regexReplaceAll functions (the must variants
// and the others only differ by panicking on an invalid expression, which text/template
// reports as the same error). The matches are counted first: the text around them is kept,
// each match becomes the replacement, in which every $ can bring back at most the match.
func regexReplaceAll(literal bool) func(expr, s, repl string) (string, error) {
	return func(expr, s, repl string) (string, error) {
		r, err := regexp.Compile(expr)
		if err != nil {
			return "", err
		}
		matches, matched := 0, 0
		r.ReplaceAllStringFunc(s, func(m string) string {
			matches++
			matched += len(m)
			return ""
		})
		perMatch, dollars := len(repl), 0
		if !literal {
			dollars = strings.Count(repl, "$")
		}
		if size := len(s) - matched + matches*perMatch + dollars*matched; size > MaxValueSize {
			return "", errResult(size)
		}
		if literal {
			return r.ReplaceAllLiteralString(s, repl), nil
		}
		return r.ReplaceAllString(s, repl), nil
	}
}

// split, splitn and splitList make one string, and for split and splitn one map key, per
// piece; splitting a long text at every character would cost 20 to 80 times its size.
var (
	sprigSplit  = sprig.GenericFuncMap()["split"].(func(string, string) map[string]string)
	sprigSplitn = sprig.GenericFuncMap()["splitn"].(func(string, int, string) map[string]string)
)

func split(sep, s string) (map[string]string, error) {
	if err := splitSize(sep, s, -1); err != nil {
		return nil, err
	}
	return sprigSplit(sep, s), nil
}

func splitn(sep string, n int, s string) (map[string]string, error) {
	if err := splitSize(sep, s, n); err != nil {
		return nil, err
	}
	return sprigSplitn(sep, n, s), nil
}

func splitList(sep, s string) ([]string, error) {
	if err := splitSize(sep, s, -1); err != nil {
		return nil, err
	}
	return strings.Split(s, sep), nil
}

// splitSize checks the pieces of a split, as templatebudget.SizeOf counts them with room for a map key.
func splitSize(sep, s string, n int) error {
	pieces := strings.Count(s, sep) + 1
	if n >= 0 && pieces > n {
		pieces = n
	}
	if size := len(s) + 24*pieces; size > MaxValueSize {
		return errResult(size)
	}
	return nil
}
