package fluxyaml

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// Workload names the workload an update is for, in Flux v1's
// <namespace>:<kind>/<name> form. It is the workload package's Ref, so the
// updater environment and in-place edits agree on what a reference means.
type Workload = workload.Ref

// ParseWorkload parses "default:deployment/foo" (namespace "<cluster>"
// for cluster-scoped objects).
func ParseWorkload(s string) (Workload, error) { return workload.ParseRef(s) }

// UpdaterKind selects which command of each updater runs.
type UpdaterKind string

const (
	// ImageUpdate runs the containerImage commands.
	ImageUpdate UpdaterKind = "image"
	// PolicyUpdate runs the policy commands.
	PolicyUpdate UpdaterKind = "policy"
)

// workloadEnv is what every updater gets. Like Flux v1, FLUX_WORKLOAD and
// FLUX_WL_KIND carry the kind in lower case and FLUX_WL_NS is "<cluster>"
// when the workload has no namespace; callers should pass the effective
// namespace of namespaced workloads.
func workloadEnv(w Workload) map[string]string {
	ns := w.Namespace
	if ns == "" {
		ns = workload.ClusterScope
	}
	return map[string]string{
		"FLUX_WORKLOAD": w.String(),
		"FLUX_WL_NS":    ns,
		"FLUX_WL_KIND":  strings.ToLower(w.Kind),
		"FLUX_WL_NAME":  w.Name,
	}
}

// ImageEnv is the environment of containerImage updaters: the workload
// variables plus FLUX_CONTAINER, FLUX_IMG and FLUX_TAG, split so that the
// documented "$FLUX_IMG:$FLUX_TAG" rebuilds image exactly (see SplitImage).
func ImageEnv(w Workload, container, image string) (map[string]string, error) {
	name, tag, err := SplitImage(image)
	if err != nil {
		return nil, err
	}
	if container == "" {
		return nil, errors.New("container name is required for an image update")
	}
	env := workloadEnv(w)
	env["FLUX_CONTAINER"] = container
	env["FLUX_IMG"] = name
	env["FLUX_TAG"] = tag
	return env, nil
}

// PolicyEnv is the environment of policy updaters: the workload variables
// plus FLUX_POLICY and FLUX_POLICY_VALUE. A nil or empty value leaves
// FLUX_POLICY_VALUE unset, which tells the updater to remove the policy: as in
// Flux v1 a present policy has a non-empty value, and raw and patchUpdated
// updates remove it the same way.
func PolicyEnv(w Workload, policy string, value *string) map[string]string {
	env := workloadEnv(w)
	env["FLUX_POLICY"] = policy
	if value != nil && *value != "" {
		env["FLUX_POLICY_VALUE"] = *value
	}
	return env
}

var (
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9A-Za-z=_-]{32,}$`)
)

// SplitImage splits an image reference into name and tag for FLUX_IMG
// and FLUX_TAG. The tag is after the last ":" that follows the last "/",
// so a registry port ("host:5000/app:1.2") stays in the name. A reference
// with a tag and a digest ("app:1.2@sha256:...") gets tag "1.2@sha256:...",
// so "$FLUX_IMG:$FLUX_TAG" still rebuilds it. A reference without a tag is
// refused, including a bare digest ("app@sha256:..."): "$FLUX_IMG:$FLUX_TAG"
// cannot express it and would write a broken image into Git.
func SplitImage(image string) (name, tag string, err error) {
	if image == "" || strings.ContainsFunc(image, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", "", fmt.Errorf("invalid image reference %q", image)
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	switch {
	case name == "":
		return "", "", fmt.Errorf("invalid image reference %q: no repository", image)
	case tag == "" && hasDigest:
		return "", "", fmt.Errorf("image %q has a digest but no tag: updaters receive FLUX_IMG and FLUX_TAG, which cannot express a digest-only reference", image)
	case tag == "":
		return "", "", fmt.Errorf("image %q has no tag", image)
	case !tagPattern.MatchString(tag):
		return "", "", fmt.Errorf("invalid tag %q in image %q", tag, image)
	case hasDigest && !digestPattern.MatchString(digest):
		return "", "", fmt.Errorf("invalid digest %q in image %q", digest, image)
	}
	if hasDigest {
		tag += "@" + digest
	}
	return name, tag, nil
}

// RunUpdaters runs the containerImage (ImageUpdate) or policy
// (PolicyUpdate) command of every updater of a commandUpdated config, in
// order, in dir (the target path, see TargetDir) with env (from ImageEnv or
// PolicyEnv). Updaters without that command are skipped; a config with no
// such command at all is an error, as in Flux v1, since the update would
// silently do nothing. The first failure stops the run.
func RunUpdaters(ctx context.Context, x Executor, dir string, cfg *Config, kind UpdaterKind, env map[string]string) error {
	var role string
	switch kind {
	case ImageUpdate:
		role = "containerImage updater"
	case PolicyUpdate:
		role = "policy updater"
	default:
		return fmt.Errorf("unknown updater kind %q", kind)
	}
	if cfg == nil || cfg.CommandUpdated == nil {
		return fmt.Errorf("%s is not a commandUpdated config: it has no updaters", cfg.Name())
	}
	ran := 0
	for _, u := range cfg.CommandUpdated.Updaters {
		c := u.ContainerImage
		if kind == PolicyUpdate {
			c = u.Policy
		}
		if c == nil {
			continue
		}
		if _, err := x.Run(ctx, *c, dir, env); err != nil {
			var ce *CommandError
			if errors.As(err, &ce) {
				ce.Role = role
				ce.ConfigFile = cfg.Name()
			}
			return err
		}
		ran++
	}
	if ran == 0 {
		return fmt.Errorf("%s has no %ss", cfg.Name(), role)
	}
	return nil
}
