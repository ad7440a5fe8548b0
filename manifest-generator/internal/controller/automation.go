package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/workload"
)

// automate runs the automated image releases of a generation (docs/automation.md): it runs
// after each successful apply while the gates are open, so a change freeze stops releases and
// the first apply after it releases what waited. It scans at most once per
// spec.automation.interval, or when a new revision was applied (its workloads or policies may
// have changed); the scanner shares each repository's tag list between the workloads and
// generations that use it.
func (r *ManifestGenerationReconciler) automate(ctx context.Context, obj *generatorv1.ManifestGeneration,
	objects []*unstructured.Unstructured) {
	spec := obj.Spec.Automation
	if spec == nil || r.Scanner == nil {
		obj.Status.Automation = nil
		conditions.Delete(obj, generatorv1.AutomationFailedCondition)
		return
	}
	if held := obj.Status.Gates; held != nil && held.HeldSince != nil {
		// Closed gates still let the applied revision be applied again (drift), not releases.
		return
	}
	now := time.Now()
	st := obj.Status.Automation
	if st != nil && st.LastScanTime != nil && st.Revision == obj.Status.LastAppliedRevision &&
		now.Sub(st.LastScanTime.Time) < spec.GetInterval() {
		return
	}
	next := &generatorv1.AutomationStatus{LastScanTime: &metav1.Time{Time: now}, Revision: obj.Status.LastAppliedRevision}
	if st != nil {
		next.LastRelease = st.LastRelease
	}
	containers := automatedContainers(objects, obj.Namespace)
	var regs registries
	if len(containers) > 0 { // the Secrets are read only when there is something to scan
		regs = r.registries(ctx, obj)
	}
	var failures []automationFailure
	for _, c := range containers {
		img := generatorv1.AutomatedImage{Workload: c.ref.String(), Container: c.container, Image: c.image, Filter: c.filter, Locked: c.locked}
		tag, err := r.newestTag(ctx, regs, c)
		if err != nil {
			failures = append(failures, automationFailure{c: c, err: err})
		}
		img.LatestTag = tag
		next.Images = append(next.Images, img)
		if c.locked || tag == "" || tag == currentTag(c.image) {
			continue
		}
		image := withTag(c.image, tag)
		mu, created, err := r.release(ctx, obj, c, tag, image)
		if err != nil {
			failures = append(failures, automationFailure{c: c, err: fmt.Errorf("creating the release of %s: %w", image, err)})
			continue
		}
		if created {
			next.LastRelease = &generatorv1.AutomatedRelease{ManifestUpdate: mu, Workload: c.ref.String(), Container: c.container,
				Image: image, Time: metav1.Time{Time: now}}
			r.EventRecorder.AnnotatedEventf(obj, map[string]string{"image": image}, corev1.EventTypeNormal,
				generatorv1.ReleaseCreatedReason, "ManifestUpdate '%s' releases %s to %s container %s", mu, image, c.ref, c.container)
		}
	}
	obj.Status.Automation = next
	r.markAutomation(obj, failures)
	if r.Metrics != nil {
		// gotk_reconcile_condition{type="AutomationFailed"}, while it is set.
		if conditions.Has(obj, generatorv1.AutomationFailedCondition) {
			r.Metrics.RecordCondition(ctx, obj, generatorv1.AutomationFailedCondition)
		} else {
			r.Metrics.DeleteCondition(ctx, obj, generatorv1.AutomationFailedCondition)
		}
	}
	log.FromContext(ctx).V(1).Info("scanned the images of the automated workloads", "images", len(next.Images))
}

// newestTag is the newest tag of the container's repository that its filter accepts; "" when
// none does (not a failure: nothing to release).
func (r *ManifestGenerationReconciler) newestTag(ctx context.Context, regs registries, c automatedContainer) (string, error) {
	filter, err := imagescan.ParseFilter(c.filter)
	if err != nil {
		return "", &filterError{policy: workload.PolicyAnnotation(workload.TagPolicy(c.container)), err: err}
	}
	ref, err := name.ParseReference(c.image, regs.nameOptions()...)
	if err != nil {
		return "", fmt.Errorf("image '%s': %w", c.image, err)
	}
	opts, err := regs.options(ctx, c)
	if err != nil {
		return "", err
	}
	tag, err := r.Scanner.Newest(ctx, ref.Context(), filter, opts)
	if errors.Is(err, imagescan.ErrNoMatchingTag) {
		return "", nil
	}
	return tag, err
}

// filterError is an invalid tag filter: the user fixes the annotation.
type filterError struct {
	policy string
	err    error
}

func (e *filterError) Error() string {
	return fmt.Sprintf("tag filter: %s: fix the %s annotation", e.err, e.policy)
}

type automationFailure struct {
	c   automatedContainer
	err error
}

// markAutomation sets AutomationFailed from the failures of a scan (an invalid filter first: a
// user must fix it), with a Warning event per failure, or removes it.
func (r *ManifestGenerationReconciler) markAutomation(obj *generatorv1.ManifestGeneration, failures []automationFailure) {
	if len(failures) == 0 {
		conditions.Delete(obj, generatorv1.AutomationFailedCondition)
		return
	}
	reason := generatorv1.ScanFailedReason
	msgs := make([]string, 0, len(failures))
	for _, f := range failures {
		msg := fmt.Sprintf("%s container %s: %s", f.c.ref, f.c.container, f.err)
		var fe *filterError
		if errors.As(f.err, &fe) {
			reason = generatorv1.InvalidFilterReason
		}
		msgs = append(msgs, msg)
	}
	msg := strings.Join(msgs, "; ")
	conditions.MarkTrue(obj, generatorv1.AutomationFailedCondition, reason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
}

// currentTag is the tag of an image reference ("latest" when it has none).
func currentTag(image string) string {
	_, tag := splitTag(image)
	if tag == "" {
		return "latest"
	}
	return tag
}

// withTag is image with its tag replaced by tag and its digest dropped, the repository kept as
// written (no registry or library/ prefix added).
func withTag(image, tag string) string {
	repo, _ := splitTag(image)
	return repo + ":" + tag
}

// splitTag splits `repo[:tag][@digest]` into the repository and the tag.
func splitTag(image string) (repo, tag string) {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}
