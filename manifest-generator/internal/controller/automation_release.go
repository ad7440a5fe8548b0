package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// pendingRelease is a release one scan decided: image for container c.
type pendingRelease struct {
	c     automatedContainer
	image string
	// key is what the release is of, besides the container: the tag, or tag@digest when pinned
	// (a re-pushed tag is then a new release).
	key string
}

// releaseName names the release of key to one container of a workload: readable (workload,
// container, tag) and unique to the three (a hash), so that a release is created once and a
// failed one is not created again while it exists.
func releaseName(c automatedContainer, key string) string {
	tag, _, _ := strings.Cut(key, "@")
	return hashedName(c.ref.Name+"-"+c.container+"-"+tag, c.ref.String()+"\x00"+c.container+"\x00"+key)
}

// groupName names the release of a whole scan: after the generation, unique to its changes.
func groupName(gen string, releases []pendingRelease) string {
	var id strings.Builder
	for _, p := range releases {
		fmt.Fprintf(&id, "%s\x00%s\x00%s\x00", p.c.ref, p.c.container, p.key)
	}
	return hashedName(gen+"-release", id.String())
}

// hashedName is base made a DNS name, with the first 8 hex digits of the digest of id.
func hashedName(base, id string) string {
	sum := sha256.Sum256([]byte(id))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	base = strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(base), "-"), "-.")
	if max := 63 - len(suffix); len(base) > max {
		base = strings.TrimRight(base[:max], "-.")
	}
	return base + suffix
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// fluxShardLabel is the label Flux shards its controllers by (--watch-label-selector).
const fluxShardLabel = "sharding.fluxcd.io/key"

// releaseAll creates the ManifestUpdates of a scan's releases: one per container, or one for
// them all with spec.automation.group: perScan. It records the last one created in next.
func (r *ManifestGenerationReconciler) releaseAll(ctx context.Context, gen *generatorv1.ManifestGeneration,
	releases []pendingRelease, next *generatorv1.AutomationStatus, now time.Time) []automationFailure {
	if len(releases) == 0 {
		return nil
	}
	if gen.Spec.Automation.Group == generatorv1.GroupPerScan {
		mu := r.newRelease(gen, groupName(gen.Name, releases))
		for _, p := range releases {
			mu.Spec.ContainerImages = append(mu.Spec.ContainerImages, generatorv1.WorkloadImageUpdate{Workload: p.c.ref.String(),
				ContainerImageUpdate: generatorv1.ContainerImageUpdate{Container: p.c.container, Image: p.image}})
		}
		created, err := r.createRelease(ctx, gen, mu)
		if err != nil {
			failures := make([]automationFailure, len(releases))
			for i, p := range releases {
				failures[i] = automationFailure{c: p.c, err: fmt.Errorf("creating the grouped release %s: %w", mu.Name, err)}
			}
			return failures
		}
		if created {
			next.LastRelease = &generatorv1.AutomatedRelease{ManifestUpdate: mu.Name, Workload: releases[0].c.ref.String(),
				Container: releases[0].c.container, Image: releases[0].image, Time: metav1.Time{Time: now}}
			r.EventRecorder.Eventf(gen, corev1.EventTypeNormal, generatorv1.ReleaseCreatedReason,
				"ManifestUpdate '%s' releases %d images in one commit", mu.Name, len(releases))
		}
		return nil
	}
	var failures []automationFailure
	for _, p := range releases {
		mu := r.newRelease(gen, releaseName(p.c, p.key))
		mu.Spec.Workload = p.c.ref.String()
		mu.Spec.ContainerImage = &generatorv1.ContainerImageUpdate{Container: p.c.container, Image: p.image}
		created, err := r.createRelease(ctx, gen, mu)
		if err != nil {
			failures = append(failures, automationFailure{c: p.c, err: fmt.Errorf("creating the release of %s: %w", p.image, err)})
			continue
		}
		if created {
			next.LastRelease = &generatorv1.AutomatedRelease{ManifestUpdate: mu.Name, Workload: p.c.ref.String(), Container: p.c.container,
				Image: p.image, Time: metav1.Time{Time: now}}
			r.EventRecorder.AnnotatedEventf(gen, map[string]string{"image": p.image}, corev1.EventTypeNormal,
				generatorv1.ReleaseCreatedReason, "ManifestUpdate '%s' releases %s to %s container %s", mu.Name, p.image, p.c.ref, p.c.container)
		}
	}
	return failures
}

// newRelease is a ManifestUpdate of the generation, labelled as automated, committed and
// proposed as spec.automation says.
func (r *ManifestGenerationReconciler) newRelease(gen *generatorv1.ManifestGeneration, name string) *generatorv1.ManifestUpdate {
	spec := gen.Spec.Automation
	mu := &generatorv1.ManifestUpdate{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: gen.Namespace,
			Name:      name,
			Labels:    map[string]string{generatorv1.AutomatedLabel: "true", generatorv1.GenerationLabel: gen.Name},
		},
		Spec: generatorv1.ManifestUpdateSpec{GenerationRef: meta.LocalObjectReference{Name: gen.Name}},
	}
	// A generation kept by one instance of the controller (--watch-label-selector on Flux's
	// sharding.fluxcd.io/key) has its releases kept by the same.
	if shard, ok := gen.Labels[fluxShardLabel]; ok {
		mu.Labels[fluxShardLabel] = shard
	}
	if spec.Git != nil {
		mu.Spec.Git = spec.Git.DeepCopy()
	}
	if spec.PullRequest != nil {
		mu.Spec.PullRequest = spec.PullRequest.DeepCopy()
	}
	return mu
}

// createRelease creates mu, owned by the generation. created is false when it exists already
// (released before, or failed: it is not retried by creating it again).
func (r *ManifestGenerationReconciler) createRelease(ctx context.Context, gen *generatorv1.ManifestGeneration,
	mu *generatorv1.ManifestUpdate) (created bool, err error) {
	if err := controllerutil.SetOwnerReference(gen, mu, r.Scheme()); err != nil {
		return false, err
	}
	err = r.Create(ctx, mu, client.FieldOwner(ControllerName))
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}
