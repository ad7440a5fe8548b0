// Package workload changes container images and release policies of
// Kubernetes workloads, both on decoded objects (unstructured) and in place
// in YAML files (kyaml nodes), the way Flux v1's updaters did.
package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ClusterScope is the namespace part of a reference to a cluster-scoped
// object, as in Flux v1 ("<cluster>:namespace/foo").
const ClusterScope = "<cluster>"

// Ref names a workload in Flux v1's format <namespace>:<kind>/<name>, e.g.
// "default:deployment/foo". Namespace is empty for cluster-scoped objects
// (written "<cluster>") and for references that leave the namespace to the
// default (":deployment/foo"). Kind is compared case-insensitively.
type Ref struct {
	Namespace string
	Kind      string
	Name      string
}

// ParseRef parses "<namespace>:<kind>/<name>". The namespace may be
// "<cluster>" or empty; kind and name are required.
func ParseRef(s string) (Ref, error) {
	ns, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, fmt.Errorf("invalid workload reference %q: want <namespace>:<kind>/<name>", s)
	}
	kind, name, ok := strings.Cut(rest, "/")
	if !ok || kind == "" || name == "" || strings.ContainsAny(kind, ":/ ") || strings.ContainsAny(name, "/ ") {
		return Ref{}, fmt.Errorf("invalid workload reference %q: want <namespace>:<kind>/<name>", s)
	}
	if ns == ClusterScope {
		ns = ""
	}
	if strings.ContainsAny(ns, "/<> ") {
		return Ref{}, fmt.Errorf("invalid workload reference %q: bad namespace %q", s, ns)
	}
	return Ref{Namespace: ns, Kind: kind, Name: name}, nil
}

// String formats the reference like Flux v1 does: kind in lower case and
// "<cluster>" for an empty namespace.
func (r Ref) String() string {
	ns := r.Namespace
	if ns == "" {
		ns = ClusterScope
	}
	return ns + ":" + strings.ToLower(r.Kind) + "/" + r.Name
}

// Matches reports whether u is the object r names. An empty namespace, on
// either side, stands for defaultNamespace (the namespace objects without
// one end up in); cluster-scoped objects have no namespace on both sides.
func (r Ref) Matches(u *unstructured.Unstructured, defaultNamespace string) bool {
	if u == nil {
		return false
	}
	return r.matches(u.GetKind(), u.GetNamespace(), u.GetName(), defaultNamespace)
}

func (r Ref) matches(kind, namespace, name, defaultNamespace string) bool {
	if !strings.EqualFold(r.Kind, kind) || r.Name != name {
		return false
	}
	return orDefault(r.Namespace, defaultNamespace) == orDefault(namespace, defaultNamespace)
}

func orDefault(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}
