// Package dependency evaluates references to live objects: existence, readiness (kstatus) and
// CEL readiness expressions (readyExpr), compiled once and cached. A ResourceSet's spec.dependsOn
// and a Gate's spec.checks are evaluated with it, in one CEL environment and under one tenancy
// rule: the data of a Secret of another namespace is never seen.
package dependency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// Ref mirrors one spec.dependsOn entry.
type Ref struct {
	APIVersion, Kind, Name, Namespace string
	Ready                             bool
	ReadyExpr                         string
}

// Checker evaluates dependencies with a client that reads as the ResourceSet's identity.
//
// Reader should read the API server directly (a manager's APIReader, or an impersonating client),
// not an informer cache: dependencies are arbitrary kinds. When Reader also tells the scope of a
// kind (client.Client does), cluster-scoped dependencies are named without a namespace and unknown
// kinds are found before reading. Cache may be nil: a cache shared by the process is used.
type Checker struct {
	Reader client.Reader
	Cache  *Cache
	// Noun names an entry in messages ("dependency" when empty; a gate's are checks) and Owner
	// the object that has the entries ("ResourceSet" when empty).
	Noun, Owner string
}

// words are the nouns of the messages.
type words struct{ noun, owner string }

func (c *Checker) words() words {
	w := words{noun: c.Noun, owner: c.Owner}
	if w.noun == "" {
		w.noun = "dependency"
	}
	if w.owner == "" {
		w.owner = "ResourceSet"
	}
	return w
}

var (
	defaultCache     *Cache
	defaultCacheOnce sync.Once
)

func (c *Checker) cache() *Cache {
	if c.Cache != nil {
		return c.Cache
	}
	defaultCacheOnce.Do(func() { defaultCache = NewCache() })
	return defaultCache
}

// Check returns nil when every dependency is met. Otherwise it returns, for the first unmet
// dependency in order:
//   - a *NotReadyError when the caller should wait: the object is not found, is not ready, its
//     readyExpr evaluated to false or failed at run time (a field it reads may appear later);
//   - a terminal error: a *CompileError for a readyExpr that does not compile (every readyExpr is
//     compiled before any object is read, so a bad expression is reported at once), an
//     *UnknownKindError when the apiVersion/kind is not served, an *InvalidRefError;
//   - any other error (API server unreachable, forbidden, context ended) as is, to retry with
//     backoff.
//
// Semantics of an entry:
//   - the object must exist;
//   - readyExpr, when set, decides readiness, whether or not ready is true (the user asked for the
//     expression; the examples of docs/resourceset.md set both);
//   - ready: true without readyExpr requires kstatus' Current status (observedGeneration caught up
//     with generation, no Reconciling/Stalled, the built-in rules for Deployments, CRDs, ...); for
//     custom resources kstatus has no rule for, it also requires a Ready condition with status
//     "True" (docs/resourceset.md's definition), because kstatus takes an object without conditions as
//     Current, and a custom resource whose controller did not write its status yet is not ready.
//
// Tenancy: readyExpr never sees the data, stringData, annotations or managed fields of a Secret
// in another namespace than
// ownerNamespace; the fields are removed before evaluation.
//
// ownerNamespace is the ResourceSet's namespace, the default namespace of refs without one.
func (c *Checker) Check(ctx context.Context, ownerNamespace string, deps []Ref) error {
	cache := c.cache()
	programs := make([]*compiled, len(deps))
	for i, dep := range deps {
		if err := validate(i, dep); err != nil {
			return err
		}
		if dep.ReadyExpr == "" {
			continue
		}
		programs[i] = cache.get(dep.ReadyExpr)
		if cerr := programs[i].err; cerr != nil {
			withDep := *cerr
			withDep.Dependency, withDep.Noun = c.display(dep, ownerNamespace), c.words().noun
			return &withDep
		}
	}
	for i, dep := range deps {
		if err := c.checkOne(ctx, ownerNamespace, dep, programs[i]); err != nil {
			return err
		}
	}
	return nil
}

func validate(i int, dep Ref) error {
	switch {
	case dep.APIVersion == "":
		return &InvalidRefError{Index: i, Reason: "apiVersion is required"}
	case dep.Kind == "":
		return &InvalidRefError{Index: i, Reason: "kind is required"}
	case dep.Name == "":
		return &InvalidRefError{Index: i, Reason: "name is required"}
	}
	if _, err := schema.ParseGroupVersion(dep.APIVersion); err != nil {
		return &InvalidRefError{Index: i, Reason: fmt.Sprintf("apiVersion %q is not valid: %v", dep.APIVersion, err)}
	}
	return nil
}

// scopeTeller is the part of client.Client that tells a kind's scope from the RESTMapper.
type scopeTeller interface {
	IsObjectNamespaced(obj runtime.Object) (bool, error)
}

func (c *Checker) checkOne(ctx context.Context, ownerNamespace string, dep Ref, prog *compiled) error {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(dep.APIVersion)
	obj.SetKind(dep.Kind)

	namespace := dep.Namespace
	if namespace == "" {
		namespace = ownerNamespace
	}
	if st, ok := c.Reader.(scopeTeller); ok {
		namespaced, err := st.IsObjectNamespaced(obj)
		if err != nil {
			return c.readError(dep, ownerNamespace, err)
		}
		if !namespaced {
			namespace = ""
		}
	}
	name := dependencyName(dep, namespace)

	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dep.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return &NotReadyError{Dependency: name, Message: fmt.Sprintf("%s '%s' not found", c.words().noun, name)}
		}
		return c.readError(dep, ownerNamespace, err)
	}

	if prog != nil {
		return evaluate(ctx, c.words(), name, obj.Object, prog, hideSecretData(dep, obj.GetNamespace(), ownerNamespace))
	}
	if dep.Ready {
		return readyByStatus(c.words(), name, obj)
	}
	return nil
}

func (c *Checker) readError(dep Ref, ownerNamespace string, err error) error {
	name := c.display(dep, ownerNamespace)
	if meta.IsNoMatchError(err) {
		return &UnknownKindError{Dependency: name, APIVersion: dep.APIVersion, Kind: dep.Kind, Err: err}
	}
	return fmt.Errorf("reading %s '%s': %w", c.words().noun, name, err)
}

// display names a dependency before it is read (its scope may be unknown).
func (c *Checker) display(dep Ref, ownerNamespace string) string {
	namespace := dep.Namespace
	if namespace == "" {
		namespace = ownerNamespace
	}
	if st, ok := c.Reader.(scopeTeller); ok {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(dep.APIVersion)
		obj.SetKind(dep.Kind)
		if namespaced, err := st.IsObjectNamespaced(obj); err == nil && !namespaced {
			namespace = ""
		}
	}
	return dependencyName(dep, namespace)
}

// dependencyName is "<apiVersion>/<kind> [<namespace>/]<name>", e.g. "v1/Secret dev/my-gate".
func dependencyName(dep Ref, namespace string) string {
	if namespace == "" {
		return fmt.Sprintf("%s/%s %s", dep.APIVersion, dep.Kind, dep.Name)
	}
	return fmt.Sprintf("%s/%s %s/%s", dep.APIVersion, dep.Kind, namespace, dep.Name)
}

// hideSecretData tells whether the object is a Secret in another namespace than the owner's,
// whose data the expression must not see.
func hideSecretData(dep Ref, namespace, ownerNamespace string) bool {
	gv, _ := schema.ParseGroupVersion(dep.APIVersion)
	return gv.Group == "" && dep.Kind == "Secret" && namespace != ownerNamespace
}

// readyByStatus decides readiness without an expression: see Check.
func readyByStatus(w words, name string, obj *unstructured.Unstructured) error {
	notReady := func(why string) error {
		return &NotReadyError{Dependency: name, Message: fmt.Sprintf("%s '%s' is not ready: %s", w.noun, name, why)}
	}
	res, err := status.Compute(obj)
	if err != nil {
		return notReady(err.Error())
	}
	if res.Status != status.CurrentStatus {
		why := res.Message
		if why == "" {
			why = "status " + res.Status.String()
		}
		return notReady(why)
	}
	if status.GetLegacyConditionsFn(obj) == nil && isCustomResource(obj.GroupVersionKind().Group) && !hasReadyTrue(obj) {
		return notReady("it has no Ready condition with status True")
	}
	return nil
}

// isCustomResource tells whether a group is not one of Kubernetes' own (core, apps, batch,
// *.k8s.io, ...), which are served by CRDs or aggregated APIs.
func isCustomResource(group string) bool {
	return strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io")
}

func hasReadyTrue(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cond, ok := c.(map[string]any)
		if ok && cond["type"] == "Ready" && cond["status"] == "True" {
			return true
		}
	}
	return false
}

// evaluate runs a readyExpr with the object's top-level fields as variables.
func evaluate(ctx context.Context, w words, name string, object map[string]any, prog *compiled, hideData bool) error {
	// CEL quotes the values it fails on ("no such key: <value>"): a Secret's are masked in the
	// message, which reaches conditions, events, notifications and the dashboard.
	secret := object
	vars := make(map[string]any, len(object)+len(emptyWhenAbsent)+1)
	for k, v := range object {
		vars[k] = v
	}
	hint := ""
	if hideData {
		visible := make(map[string]any, len(object))
		for k, v := range object {
			if k != "data" && k != "stringData" {
				visible[k] = v
			}
		}
		// Annotations may hold the data too (kubectl's last-applied-configuration does, in
		// plain text), and managed fields name its keys: both go with it.
		if md, ok := object["metadata"].(map[string]any); ok {
			kept := make(map[string]any, len(md))
			for k, v := range md {
				if k != "annotations" && k != "managedFields" {
					kept[k] = v
				}
			}
			visible["metadata"] = kept
			vars["metadata"] = kept
		}
		object = visible
		delete(vars, "data")
		delete(vars, "stringData")
		if prog.idents["data"] || prog.idents["stringData"] || prog.idents["metadata"] || prog.idents[selfVariable] {
			hint = " (the data, annotations and managed fields of a Secret in another namespace than the " + w.owner + " are not readable)"
		}
	}
	for _, k := range emptyWhenAbsent {
		if _, ok := vars[k]; !ok {
			vars[k] = map[string]any{}
		}
	}
	vars[selfVariable] = object

	val, _, err := prog.program.ContextEval(ctx, vars)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted: not a verdict on the dependency.
			return fmt.Errorf("evaluating readyExpr of %s '%s': %w", w.noun, name, ctx.Err())
		}
		msg := secrets.MaskValues(secret, err.Error())
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			msg = fmt.Sprintf("evaluation cost exceeded the limit of %d", CostLimit)
		}
		return &NotReadyError{Dependency: name, Err: secrets.MaskError(secret, err),
			Message: fmt.Sprintf("%s '%s' readyExpr failed: %s%s", w.noun, name, msg, hint)}
	}
	switch v := val.(type) {
	case types.Bool:
		if v {
			return nil
		}
		return &NotReadyError{Dependency: name, Message: fmt.Sprintf("%s '%s' readyExpr evaluated to false%s", w.noun, name, hint)}
	default:
		return &NotReadyError{Dependency: name,
			Message: fmt.Sprintf("%s '%s' readyExpr evaluated to %s, not bool", w.noun, name, val.Type().TypeName())}
	}
}
