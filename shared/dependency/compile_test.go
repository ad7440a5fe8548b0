package dependency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Expressions that do not compile are terminal, with CEL's position, and are reported before
// any object is read (the first dependency here is missing).
func TestCompileErrorsAreTerminalWithPosition(t *testing.T) {
	missing := Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "missing"}
	for _, tc := range []struct{ expr, want string }{
		{
			expr: "string(base64.decode(data.gate) == 'opened'",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:44: Syntax error: missing ')' at '<EOF>'\n" +
				" | string(base64.decode(data.gate) == 'opened'\n" +
				" | ...........................................^",
		},
		{
			expr: "status.ready ==",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting",
		},
		{
			expr: "1 + 2",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:3: expression must evaluate to bool, found int\n" +
				" | 1 + 2\n" +
				" | ..^",
		},
		{
			expr: "'opened'",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:1: expression must evaluate to bool, found string",
		},
		{
			expr: "base64.decodeAll(data.gate) == b'x'",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:17: undeclared reference to 'decodeAll'",
		},
		{
			expr: "size(data) == 'one'",
			want: "readyExpr of dependency 'v1/Secret dev/my-gate': ERROR: <input>:1:12: found no matching overload for '_==_' applied to '(int, string)'",
		},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			g := NewWithT(t)
			err := check("dev", missing, Ref{APIVersion: "v1", Kind: "Secret", Name: "my-gate", Ready: true, ReadyExpr: tc.expr})
			var ce *CompileError
			g.Expect(errors.As(err, &ce)).To(BeTrue(), "%T: %v", err, err)
			g.Expect(err.Error()).To(HavePrefix(tc.want))
			g.Expect(ce.Dependency).To(Equal("v1/Secret dev/my-gate"))
			g.Expect(ce.Expr).To(Equal(tc.expr))
			g.Expect(IsTerminal(err)).To(BeTrue())

			// Cache.Compile reports the same, without the dependency it does not know.
			_, err = checker.Cache.Compile(tc.expr)
			g.Expect(err).To(BeAssignableToTypeOf(&CompileError{}))
			g.Expect(err.Error()).To(Equal("readyExpr: " + ce.Detail))
		})
	}
}

// An apiVersion/kind the cluster does not serve is terminal, whether or not the reader knows the
// scope of kinds.
func TestUnknownKindIsTerminal(t *testing.T) {
	readerOnly := &Checker{Reader: struct{ client.Reader }{k8s}}
	for _, ref := range []Ref{
		{APIVersion: "nope.sluice.dev/v1", Kind: "Nope", Name: "x"},
		{APIVersion: "testing.sluice.dev/v9", Kind: "Widget", Name: "x", Ready: true},
		{APIVersion: "v1", Kind: "Secrets", Name: "x", ReadyExpr: "true"},
	} {
		for _, c := range []*Checker{checker, readerOnly} {
			g := NewWithT(t)
			err := c.Check(context.Background(), "dev", []Ref{ref})
			g.Expect(err).To(BeAssignableToTypeOf(&UnknownKindError{}))
			g.Expect(err).To(MatchError(fmt.Sprintf("dependency '%s/%s dev/x': kind %s of apiVersion %s is not served by the cluster",
				ref.APIVersion, ref.Kind, ref.Kind, ref.APIVersion)))
			g.Expect(IsTerminal(err)).To(BeTrue())
		}
	}
}

func TestInvalidRefsAreTerminal(t *testing.T) {
	g := NewWithT(t)
	for ref, want := range map[Ref]string{
		{Kind: "Secret", Name: "x"}:                      "dependsOn[0]: apiVersion is required",
		{APIVersion: "v1", Name: "x"}:                    "dependsOn[0]: kind is required",
		{APIVersion: "v1", Kind: "Secret"}:               "dependsOn[0]: name is required",
		{APIVersion: "a/b/c", Kind: "Secret", Name: "x"}: `dependsOn[0]: apiVersion "a/b/c" is not valid: unexpected GroupVersion string: a/b/c`,
	} {
		err := check("dev", ref)
		g.Expect(err).To(MatchError(want))
		g.Expect(IsTerminal(err)).To(BeTrue())
	}
}

// Reading as an identity that may not read the dependency is neither "not found" nor terminal:
// the error is returned as is, to retry with backoff.
func TestForbiddenIsReturnedAsIs(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}})).To(Succeed())
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":tenant"}
	tenant, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	err = (&Checker{Reader: tenant}).Check(context.Background(), ns, []Ref{{APIVersion: "v1", Kind: "ConfigMap", Name: "a"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(HavePrefix("reading dependency 'v1/ConfigMap " + ns + "/a': ")))
	g.Expect(IsNotReady(err)).To(BeFalse())
	g.Expect(IsTerminal(err)).To(BeFalse())
}

// The cache compiles an expression once: the same program is returned, to concurrent callers too,
// and compile errors are cached as well.
func TestCacheCompilesOnce(t *testing.T) {
	g := NewWithT(t)
	cache := NewCache()
	first, err := cache.Compile(gateExpr)
	g.Expect(err).NotTo(HaveOccurred())

	var wg sync.WaitGroup
	programs := make([]any, 16)
	for i := range programs {
		wg.Go(func() {
			p, err := cache.Compile(gateExpr)
			if err == nil {
				programs[i] = p
			}
		})
	}
	wg.Wait()
	for _, p := range programs {
		g.Expect(p).To(BeIdenticalTo(first))
	}

	_, err1 := cache.Compile("1 +")
	_, err2 := cache.Compile("1 +")
	g.Expect(err1).To(HaveOccurred())
	g.Expect(err2).To(BeIdenticalTo(err1))
	g.Expect(cache.Len()).To(Equal(2))
}

// The cache is bounded: the least recently used expressions are evicted.
func TestCacheIsBounded(t *testing.T) {
	g := NewWithT(t)
	cache := newCache(3)
	keep, _ := cache.Compile("true")
	var first any
	for i := range 10 {
		p, err := cache.Compile(fmt.Sprintf("status.n == %d", i))
		g.Expect(err).NotTo(HaveOccurred())
		if i == 0 {
			first = p
		}
		_, _ = cache.Compile("true") // recently used, stays
	}
	g.Expect(cache.Len()).To(Equal(3))
	again, _ := cache.Compile("true")
	g.Expect(again).To(BeIdenticalTo(keep))
	evicted, _ := cache.Compile("status.n == 0")
	g.Expect(cache.Len()).To(Equal(3))
	g.Expect(evicted).NotTo(BeIdenticalTo(first))

	g.Expect(NewCache().size).To(Equal(1000))
	long := make([]byte, MaxExprLength+1)
	for i := range long {
		long[i] = ' '
	}
	_, err := cache.Compile(string(long) + "true")
	g.Expect(err).To(MatchError(ContainSubstring("expression code point size exceeds limit")))
}

// Free identifiers: top-level names an expression reads, not comprehension variables nor the
// namespace of a function.
func TestFreeIdents(t *testing.T) {
	cache := NewCache()
	for expr, want := range map[string][]string{
		gateExpr: {"data"},
		"metadata.generation == status.observedGeneration":                         {"metadata", "status"},
		"rules.exists(r, r.verbs.exists(v, v == 'get' && r.apiGroups.size() > 0))": {"rules"},
		"[1, 2].all(x, x > 0) && x == 1":                                           {"x"},
		"webhooks.map(w, w.name).exists(n, n == self.metadata.name)":               {"webhooks", "self"},
		"{'a': subsets}.a.size() > 0 && [secrets].size() == 1":                     {"subsets", "secrets"},
		"'x'.upperAscii() == provisioner && int(priority) > 0":                     {"provisioner", "priority"},
	} {
		g := NewWithT(t)
		e := cache.get(expr)
		g.Expect(e.err).To(BeNil(), expr)
		g.Expect(sortedKeys(e.idents)).To(ConsistOf(want), expr)
	}
}
