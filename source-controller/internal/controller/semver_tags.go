package controller

import (
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// errNoTagInRange: no tag is a semantic version within the range.
var errNoTagInRange = errors.New("no tag in range")

// highestTag is the tag, among those that are semantic versions, with the highest version
// within the range (OCI chart tags, OCIRepository tags).
func highestTag(tags []string, rng string) (string, error) {
	constraint, err := semver.NewConstraint(rng)
	if err != nil {
		return "", fmt.Errorf("semver range '%s' does not parse: %w", rng, err)
	}
	var versions []*semver.Version
	for _, t := range tags {
		if v, err := semver.NewVersion(t); err == nil && constraint.Check(v) {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return "", errNoTagInRange
	}
	sort.Sort(sort.Reverse(semver.Collection(versions)))
	return versions[0].Original(), nil
}

// filterTags keeps the tags that the regular expression filter matches (spec.ref.semverFilter).
func filterTags(tags []string, filter string) ([]string, error) {
	re, err := regexp.Compile(filter)
	if err != nil {
		return nil, fmt.Errorf("semverFilter '%s' is not a regular expression: %w", filter, err)
	}
	var kept []string
	for _, t := range tags {
		if re.MatchString(t) {
			kept = append(kept, t)
		}
	}
	return kept, nil
}
