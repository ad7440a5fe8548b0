package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/git"
)

// verificationUnchanged: SourceVerified vouches for the stored artifact under the current spec
// (mode and generation), or nothing is to be verified. Otherwise the commit is fetched and
// verified again.
func verificationUnchanged(obj *sourcev1.GitRepository) bool {
	v := obj.Spec.Verification
	if v == nil {
		return true
	}
	mode := obj.Status.SourceVerificationMode
	c := conditions.Get(obj, sourcev1.SourceVerifiedCondition)
	return mode != nil && *mode == v.GetMode() && c != nil && c.Status == "True" && c.ObservedGeneration == obj.Generation
}

// clearVerification forgets the verification of a spec without spec.verify.
func clearVerification(obj *sourcev1.GitRepository) {
	if obj.Spec.Verification == nil {
		obj.Status.SourceVerificationMode = nil
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
	}
}

// verifyCommit checks, per spec.verify.mode, the signature of the annotated tag and/or of the
// commit with the OpenPGP or SSH public keys of spec.verify.secretRef, and records
// SourceVerified and status.sourceVerificationMode. On failure nothing is stored: the error is
// returned and the last artifact stays served.
func (r *GitRepositoryReconciler) verifyCommit(ctx context.Context, obj *sourcev1.GitRepository, commit git.Commit) error {
	v := obj.Spec.Verification
	if v == nil {
		clearVerification(obj)
		return nil
	}
	data, err := r.secretData(ctx, obj.Namespace, v.SecretRef.Name)
	if err != nil {
		return r.notVerifiedGit(obj, sourcev1.VerificationErrorReason, err)
	}
	keys, err := git.ParseKeys(data)
	if err != nil {
		return r.notVerifiedGit(obj, sourcev1.VerificationErrorReason, fmt.Errorf("secret '%s/%s': %w", obj.Namespace, v.SecretRef.Name, err))
	}
	mode := v.GetMode()
	var verified []string
	if mode == sourcev1.ModeGitTag || mode == sourcev1.ModeGitTagAndHEAD {
		rev := commit.Revision
		if !rev.RefName.IsTag() {
			// No retry makes a branch a tag: the spec must change.
			return r.notVerifiedGit(obj, sourcev1.InvalidVerificationModeReason, reconcile.TerminalError(fmt.Errorf(
				"verification mode '%s' needs a tag reference (spec.ref.tag, semver or a refs/tags/ name)", mode)))
		}
		if commit.Tag == nil {
			return r.notVerifiedGit(obj, sourcev1.InvalidGitObjectReason, fmt.Errorf("cannot verify tag '%s': it is a lightweight tag, without a signature", rev.Name))
		}
		key, err := keys.VerifyTag(commit.Tag)
		if errors.Is(err, git.ErrUnsigned) {
			return r.notVerifiedGit(obj, sourcev1.InvalidGitObjectReason, fmt.Errorf("cannot verify the signature of tag '%s': it is not signed", rev.Name))
		}
		if err != nil {
			return r.notVerifiedGit(obj, sourcev1.InvalidTagSignatureReason, fmt.Errorf("signature verification of tag '%s' failed: %w", rev.Name, err))
		}
		verified = append(verified, fmt.Sprintf("tag '%s' with %s", rev.Name, key))
	}
	if mode == sourcev1.ModeGitHEAD || mode == sourcev1.ModeGitTagAndHEAD {
		key, err := keys.VerifyCommit(commit.Object)
		if err != nil {
			return r.notVerifiedGit(obj, sourcev1.InvalidCommitSignatureReason, fmt.Errorf("signature verification of commit '%s' failed: %w", commit.Revision.Hash, err))
		}
		verified = append(verified, fmt.Sprintf("commit '%s' with %s", commit.Revision.Hash, key))
	}
	msg := "verified signature of " + strings.Join(verified, " and of ")
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason, "%s", msg)
	obj.Status.SourceVerificationMode = &mode
	r.EventRecorder.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg)
	return nil
}

// notVerifiedGit records SourceVerified=False (and Ready) with a Warning event.
func (r *GitRepositoryReconciler) notVerifiedGit(obj *sourcev1.GitRepository, reason string, err error) error {
	msg := status.UserMessage(err)
	markFailure(obj, sourcev1.SourceVerifiedCondition, reason, msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	return err
}
