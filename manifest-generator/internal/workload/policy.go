package workload

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Policy annotations, as in Flux v1: a policy p is the annotation
// fluxcd.io/p. Manifests in the wild still carry the older prefixes, which
// are read and updated in place.
const (
	PolicyPrefix       = "fluxcd.io/"
	LegacyPolicyPrefix = "flux.weave.works/"
	// FilterPolicyPrefix carries tag policies: filter.fluxcd.io/<container>
	// is the same policy as fluxcd.io/tag.<container>.
	FilterPolicyPrefix = "filter.fluxcd.io/"

	PolicyAutomated  = "automated"
	PolicyLocked     = "locked"
	PolicyLockedMsg  = "locked_msg"
	PolicyLockedUser = "locked_user"
	PolicyIgnore     = "ignore"
	tagPolicyPrefix  = "tag."
)

// TagPolicy is the policy holding the tag filter of a container
// (e.g. "glob:1.*", "semver:~1.2").
func TagPolicy(container string) string { return tagPolicyPrefix + container }

// PolicyAnnotation is the annotation a new policy is written to:
// "automated" becomes "fluxcd.io/automated". A policy that already is an
// annotation key (contains "/") is returned unchanged.
func PolicyAnnotation(policy string) string {
	if strings.Contains(policy, "/") {
		return policy
	}
	return PolicyPrefix + policy
}

// policyKeys lists every annotation that may carry policy, the one new
// values are written to first.
func policyKeys(policy string) []string {
	if strings.Contains(policy, "/") {
		return []string{policy}
	}
	keys := []string{PolicyPrefix + policy, LegacyPolicyPrefix + policy}
	if c, ok := strings.CutPrefix(policy, tagPolicyPrefix); ok {
		keys = append(keys, FilterPolicyPrefix+c)
	}
	return keys
}

// removal reports whether value asks for the policy to be removed. As in
// Flux v1 a present policy always has a non-empty value ("true" for the
// boolean ones), so an empty value means removal as well.
func removal(value *string) bool { return value == nil || *value == "" }

// SetPolicy sets the policy annotation of u to *value, or removes it (under
// any of its prefixes) when value is nil or empty. An existing annotation
// with a legacy prefix is updated where it is. It reports whether the
// annotations changed; an annotations map left empty is removed.
func SetPolicy(u *unstructured.Unstructured, policy string, value *string) bool {
	annotations := u.GetAnnotations()
	keys := policyKeys(policy)
	if removal(value) {
		changed := false
		for _, k := range keys {
			if _, ok := annotations[k]; ok {
				delete(annotations, k)
				changed = true
			}
		}
		if changed {
			if len(annotations) == 0 {
				annotations = nil
			}
			u.SetAnnotations(annotations)
		}
		return changed
	}
	key := keys[0]
	for _, k := range keys {
		if _, ok := annotations[k]; ok {
			key = k
			break
		}
	}
	if old, ok := annotations[key]; ok && old == *value {
		return false
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = *value
	u.SetAnnotations(annotations)
	return true
}

// Policies returns the policies set on u, keyed by policy name
// ("automated", "tag.app"), whichever prefix carries them.
func Policies(u *unstructured.Unstructured) map[string]string {
	policies := map[string]string{}
	annotations := u.GetAnnotations()
	// Older prefixes first, so that fluxcd.io/ wins when both are present.
	for _, prefix := range []string{FilterPolicyPrefix, LegacyPolicyPrefix, PolicyPrefix} {
		for k, v := range annotations {
			name, ok := strings.CutPrefix(k, prefix)
			if !ok {
				continue
			}
			if prefix == FilterPolicyPrefix {
				name = TagPolicy(name)
			}
			policies[name] = v
		}
	}
	return policies
}
