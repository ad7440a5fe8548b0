package imagescan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Kind is the kind of a tag filter.
type Kind string

const (
	KindGlob   Kind = "glob"
	KindSemver Kind = "semver"
	KindRegex  Kind = "regex"
)

// Filter prefixes, as in Flux v1's fluxcd.io/tag.<container> policy. A
// filter without a prefix is a glob.
const (
	globPrefix      = "glob:"
	semverPrefix    = "semver:"
	regexPrefix     = "regex:"
	regexpAltPrefix = "regexp:"
)

// Filter selects the tags a workload may be updated to.
type Filter struct {
	kind       Kind
	expr       string // without its prefix
	glob       string
	constraint *semver.Constraints
	re         *regexp.Regexp
}

// ParseFilter parses a tag filter as Flux v1 wrote them:
//
//   - "glob:<pattern>", or a pattern without prefix: "*" matches any run of
//     characters (none included), every other character only itself, and the
//     pattern must match the whole tag. This is what Flux v1's
//     ryanuber/go-glob did, without its slips (it let "1.*-rc" match "1.").
//     The empty filter is "glob:*", Flux v1's meaning of a workload without
//     tag policy.
//   - "semver:<constraint>": a Masterminds/semver constraint ("~1.2",
//     ">=1.0.0 <2"); tags that are not semantic versions ("latest"), with or
//     without a leading "v", never match.
//   - "regex:<expr>" or "regexp:<expr>": Go RE2 syntax, unanchored as in
//     Flux v1 (regexp.MatchString): "^" and "$" pin it to the whole tag.
//
// Errors name the filter and what is wrong with it.
func ParseFilter(s string) (Filter, error) {
	switch {
	case strings.HasPrefix(s, semverPrefix):
		expr := strings.TrimPrefix(s, semverPrefix)
		if strings.TrimSpace(expr) == "" {
			return Filter{}, fmt.Errorf("semver filter %q: empty constraint", expr)
		}
		c, err := semver.NewConstraint(expr)
		if err != nil {
			return Filter{}, fmt.Errorf("semver filter %q: %w", expr, err)
		}
		return Filter{kind: KindSemver, expr: expr, constraint: c}, nil
	case strings.HasPrefix(s, regexPrefix), strings.HasPrefix(s, regexpAltPrefix):
		expr := strings.TrimPrefix(strings.TrimPrefix(s, regexPrefix), regexpAltPrefix)
		if expr == "" {
			return Filter{}, fmt.Errorf("regex filter %q: empty expression", expr)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return Filter{}, fmt.Errorf("regex filter %q: %w", expr, err)
		}
		return Filter{kind: KindRegex, expr: expr, re: re}, nil
	default:
		if s == "" {
			return Filter{kind: KindGlob, expr: "*", glob: "*"}, nil
		}
		expr := strings.TrimPrefix(s, globPrefix)
		if expr == "" {
			return Filter{}, fmt.Errorf("glob filter %q: empty pattern", expr)
		}
		// A character no tag can hold means a typo ("semvar:1.x"), not a
		// filter that never matches on purpose.
		if i := strings.IndexFunc(expr, func(r rune) bool { return r != '*' && !tagRune(r) }); i >= 0 {
			return Filter{}, fmt.Errorf("glob filter %q: %q cannot appear in a tag (letters, digits, '_', '.', '-')", expr, expr[i:i+1])
		}
		return Filter{kind: KindGlob, expr: expr, glob: expr}, nil
	}
}

// tagRune reports whether r may appear in a tag, per the OCI distribution
// spec: [a-zA-Z0-9_.-].
func tagRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
}

// Kind is the filter's kind.
func (f Filter) Kind() Kind { return f.kind }

// String is the filter with its prefix ("glob:1.*"), as an annotation holds it.
func (f Filter) String() string { return string(f.kind) + ":" + f.expr }

// Matches reports whether tag passes the filter.
func (f Filter) Matches(tag string) bool {
	switch f.kind {
	case KindGlob:
		return globMatch(f.glob, tag)
	case KindSemver:
		_, ok := f.version(tag)
		return ok
	case KindRegex:
		return f.re.MatchString(tag)
	}
	return false
}

// version is the semantic version of tag when it satisfies a semver filter.
func (f Filter) version(tag string) (*semver.Version, bool) {
	if f.constraint == nil {
		return nil, false
	}
	v, err := semver.NewVersion(tag)
	if err != nil || !f.constraint.Check(v) {
		return nil, false
	}
	return v, true
}
