package gatesapi

import (
	"fmt"
	"regexp"
	"strings"
)

// GatesAnnotation binds an object whose API has no `spec.gates` (Flux's Kustomization, HelmRelease
// and ImageUpdateAutomation) to gates. Its value is written like `spec.gates`, on one line:
//
//	sre-approval, qa-approval           every gate must be opened (require: all)
//	all: sre-approval, qa-approval      the same, with the requirement spelled out
//	oneOf: sre-approval, bypass         at least one gate must be opened (require: oneOf)
//	flux-system/sre-approval            a gate in another namespace
//
// Grammar (spaces, tabs and newlines around each part are ignored):
//
//	value       = [ requirement ":" ] ref { "," ref }
//	requirement = "all" | "oneOf"
//	ref         = [ namespace "/" ] name      (the pattern and length of spec.gates.refs)
//
// The requirement is a prefix of the same value rather than a second annotation: the gates and
// how many of them must open are one decision, written, copied and removed in one place, so a
// lone `require` annotation can never be left behind to change the meaning of a later list, and
// removing the one annotation removes the binding. It is unambiguous because a ref can never
// contain ':'.
const GatesAnnotation = "gating.toolkit.fluxcd.io/gates"

const (
	// maxRefs and maxRefLength are those of the CRD markers on Gates.Refs.
	maxRefs      = 64
	maxRefLength = 317
	// maxQuoted bounds the part of a tenant's value an error message quotes.
	maxQuoted = 40
)

// refPattern is the items:Pattern of Gates.Refs.
var refPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ParseGatesAnnotation reads the value of GatesAnnotation into the Gates it means. Require is
// always set (RequireAll when the value has no prefix). Errors name the annotation, the offending
// part (quoted, at most 40 characters of it) and what to write instead.
func ParseGatesAnnotation(value string) (*Gates, error) {
	require := RequireAll
	list := value
	if word, rest, ok := strings.Cut(value, ":"); ok {
		switch w := strings.TrimSpace(word); w {
		case string(RequireAll), string(RequireOneOf):
			require = Requirement(w)
		default:
			if strings.EqualFold(w, string(RequireOneOf)) || strings.EqualFold(w, string(RequireAll)) {
				return nil, annotationErr("requirement %s is misspelled: write %q or %q, then ':'",
					quote(w), RequireAll, RequireOneOf)
			}
			return nil, annotationErr("unknown requirement %s before ':': write %q (every gate opened) or %q (at least one), or nothing",
				quote(w), RequireAll, RequireOneOf)
		}
		list = rest
	}
	if strings.TrimSpace(list) == "" {
		return nil, annotationErr("names no gate: list gates as \"name\" or \"namespace/name\", separated by commas (remove the annotation to stop gating)")
	}
	entries := strings.Split(list, ",")
	if len(entries) > maxRefs {
		return nil, annotationErr("names %d gates: at most %d", len(entries), maxRefs)
	}
	refs := make([]string, 0, len(entries))
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		ref := strings.TrimSpace(e)
		n := i + 1
		switch {
		case ref == "":
			return nil, annotationErr("gate %d is empty: remove the extra comma", n)
		case strings.Contains(ref, ":"):
			return nil, annotationErr("gate %d %s contains ':': only the requirement (%q or %q) may come before a ':', once, at the start",
				n, quote(ref), RequireAll, RequireOneOf)
		case len(ref) > maxRefLength:
			return nil, annotationErr("gate %d %s is %d characters long: at most %d", n, quote(ref), len(ref), maxRefLength)
		case !refPattern.MatchString(ref):
			return nil, annotationErr("gate %d %s is not a gate reference: write \"name\" or \"namespace/name\" with lower case letters, digits and '-' ('.' also in the name), starting and ending with a letter or digit",
				n, quote(ref))
		}
		if first, dup := seen[ref]; dup {
			return nil, annotationErr("gate %s is listed twice (gates %d and %d): list each gate once", quote(ref), first, n)
		}
		seen[ref] = n
		refs = append(refs, ref)
	}
	return &Gates{Require: require, Refs: refs}, nil
}

// FormatGatesAnnotation writes gates as the value of GatesAnnotation, the inverse of
// ParseGatesAnnotation: "a, b" for require all (the default), "oneOf: a, b" for require oneOf.
func FormatGatesAnnotation(g *Gates) string {
	if g == nil {
		return ""
	}
	list := strings.Join(g.Refs, ", ")
	if g.Requirement() == RequireAll {
		return list
	}
	return string(g.Requirement()) + ": " + list
}

func annotationErr(format string, args ...any) error {
	return fmt.Errorf("annotation "+GatesAnnotation+": "+format, args...)
}

// quote quotes s for an error message, cut to maxQuoted runes.
func quote(s string) string {
	if r := []rune(s); len(r) > maxQuoted {
		return fmt.Sprintf("%q…", string(r[:maxQuoted]))
	}
	return fmt.Sprintf("%q", s)
}
