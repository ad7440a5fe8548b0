package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
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
	// A reconcile request (a registry's webhook through a Receiver, `flux reconcile`) scans at
	// once and lists the tags afresh.
	request, requested := meta.ReconcileAnnotationValue(obj.GetAnnotations())
	fresh := requested && (st == nil || request != st.LastHandledScanRequest)
	if !fresh && st != nil && st.LastScanTime != nil && st.Revision == obj.Status.LastAppliedRevision &&
		now.Sub(st.LastScanTime.Time) < spec.GetInterval() {
		return
	}
	next := &generatorv1.AutomationStatus{LastScanTime: &metav1.Time{Time: now}, Revision: obj.Status.LastAppliedRevision}
	if st != nil {
		next.LastRelease, next.LastHandledScanRequest = st.LastRelease, st.LastHandledScanRequest
	}
	if requested {
		next.LastHandledScanRequest = request
	}
	containers := automatedContainers(objects, obj.Namespace)
	ch := &chooser{r: r, now: now}
	var regs registries
	if len(containers) > 0 { // the Secrets are read only when there is something to scan
		regs = r.registries(ctx, obj)
		if fresh {
			regs.notBefore = now
		}
		ch.keys = r.readVerifyKeys(ctx, obj)
	}
	var failures []automationFailure
	var releases []pendingRelease
	for _, c := range containers {
		if spec.Verify != nil && c.verify == "" {
			c.verify = generatorv1.VerifyCosign
		}
		img := generatorv1.AutomatedImage{Workload: c.ref.String(), Container: c.container, Image: c.image, Filter: c.filter, Locked: c.locked}
		prev := previousImage(st, img)
		chosen, err := r.scanContainer(ctx, regs, ch, c, spec, prev)
		if err != nil {
			failures = append(failures, automationFailure{c: c, err: err})
		}
		img.LatestTag, img.Waiting, img.Refused, img.Seen = chosen.tag, chosen.waiting, chosen.refused, chosen.seen
		if c.pinned || c.verify != "" {
			img.Digest = chosen.digest
		}
		next.Images = append(next.Images, img)
		r.reportRefused(obj, c, prev, chosen.refused)
		if c.locked || !needsRelease(c, chosen) {
			continue
		}
		image := withTag(c.image, chosen.tag)
		key := chosen.tag
		if c.pinned {
			image += "@" + chosen.digest
			key = chosen.tag + "@" + chosen.digest
		}
		releases = append(releases, pendingRelease{c: c, image: image, key: key})
	}
	failures = append(failures, r.releaseAll(ctx, obj, releases, next, now)...)
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
	log.FromContext(ctx).V(1).Info("scanned the images of the automated workloads", "images", len(next.Images), "fresh", fresh)
}

// needsRelease: the chosen tag (and, pinned, its digest) is not what the container runs.
func needsRelease(c automatedContainer, chosen choice) bool {
	if chosen.tag == "" {
		return false
	}
	if chosen.tag != currentTag(c.image) {
		return true
	}
	return c.pinned && chosen.digest != "" && chosen.digest != digestOf(c.image)
}

// previousImage is the container's entry in the last scan's status, nil when it had none.
func previousImage(st *generatorv1.AutomationStatus, img generatorv1.AutomatedImage) *generatorv1.AutomatedImage {
	if st == nil {
		return nil
	}
	for i := range st.Images {
		if p := &st.Images[i]; p.Workload == img.Workload && p.Container == img.Container {
			return p
		}
	}
	return nil
}

// reportRefused sends a Warning event for each tag refused for its signature that the last scan
// had not refused already, so that a refused tag is said once, not at every interval.
func (r *ManifestGenerationReconciler) reportRefused(obj *generatorv1.ManifestGeneration, c automatedContainer,
	prev *generatorv1.AutomatedImage, refused []generatorv1.RefusedTag) {
	for _, t := range refused {
		if prev != nil && slices.ContainsFunc(prev.Refused, func(p generatorv1.RefusedTag) bool { return p.Digest == t.Digest }) {
			continue
		}
		r.EventRecorder.AnnotatedEventf(obj, map[string]string{"image": withTag(c.image, t.Tag)}, corev1.EventTypeWarning,
			generatorv1.TagNotVerifiedReason, "%s container %s: tag %s (%s) is not released: %s", c.ref, c.container, t.Tag, t.Digest, t.Reason)
	}
}

// scanContainer lists the candidates of one container and chooses its tag; a choice without a
// tag (and no error) means nothing qualifies.
func (r *ManifestGenerationReconciler) scanContainer(ctx context.Context, regs registries, ch *chooser, c automatedContainer,
	spec *generatorv1.Automation, prev *generatorv1.AutomatedImage) (choice, error) {
	filter, err := imagescan.ParseFilter(c.filter)
	if err != nil {
		return choice{}, &policyError{policy: workload.TagPolicy(c.container), err: err, filter: true}
	}
	minAge, err := minimumAge(c, spec)
	if err != nil {
		return choice{}, err
	}
	if c.verify != "" && c.verify != generatorv1.VerifyCosign {
		return choice{}, &policyError{policy: generatorv1.VerifyPolicyPrefix + c.container,
			err: fmt.Errorf("verify %q is not a provider: the one provider is %s", c.verify, generatorv1.VerifyCosign)}
	}
	ref, err := name.ParseReference(c.image, regs.nameOptions()...)
	if err != nil {
		return choice{}, fmt.Errorf("image '%s': %w", c.image, err)
	}
	opts, err := regs.options(ctx, c)
	if err != nil {
		return choice{}, err
	}
	cands, err := r.Scanner.Candidates(ctx, ref.Context(), filter, opts)
	if errors.Is(err, imagescan.ErrNoMatchingTag) {
		return choice{}, nil
	}
	if err != nil {
		return choice{}, err
	}
	return ch.choose(ctx, c, ref.Context(), opts, cands, minAge, prev)
}

// policyError is a policy annotation that does not parse: the user fixes the annotation.
type policyError struct {
	policy string
	err    error
	// filter: it is the tag filter (InvalidFilter).
	filter bool
}

func (e *policyError) Error() string {
	what := "policy"
	if e.filter {
		what = "tag filter"
	}
	return fmt.Sprintf("%s: %s: fix the %s annotation", what, e.err, workload.PolicyAnnotation(e.policy))
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
		var pe *policyError
		if errors.As(f.err, &pe) {
			reason = generatorv1.InvalidFilterReason
			if !pe.filter {
				reason = generatorv1.InvalidPolicyReason
			}
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
