package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/cosign"
	"github.com/sluice-gitops/sluice/shared/status"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// needsVerification: spec.verify is set and SourceVerified does not already vouch for the
// stored content under the current spec (a changed spec, e.g. other keys, verifies again).
func needsVerification(obj source, v *sourcev1.OCIRepositoryVerification) bool {
	if v == nil {
		return false
	}
	c := conditions.Get(obj, sourcev1.SourceVerifiedCondition)
	return c == nil || c.Status != "True" || c.ObservedGeneration != obj.GetGeneration()
}

// verifySignature checks the cosign signature of ref (a digest: the content verified is the
// content stored) with the `*.pub` keys of spec.verify.secretRef and records SourceVerified.
// Without spec.verify the condition is removed. A failure is returned: nothing new is stored.
func (r *SourceReconciler) verifySignature(ctx context.Context, obj source, v *sourcev1.OCIRepositoryVerification,
	ref name.Digest, opts []remote.Option) error {
	if v == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	if v.SecretRef == nil { // admission refuses it; an object stored before the rule still gets a clear answer
		return r.notVerified(obj, reconcile.TerminalError(fmt.Errorf("keyless verification is not supported: set verify.secretRef to a Secret holding the cosign public keys (*.pub)")))
	}
	data, err := r.secretData(ctx, obj.GetNamespace(), v.SecretRef.Name)
	if err != nil {
		return r.notVerified(obj, err)
	}
	verifier, err := cosign.NewKeyVerifier(data)
	if err != nil {
		return r.notVerified(obj, fmt.Errorf("secret '%s/%s': %w", obj.GetNamespace(), v.SecretRef.Name, err))
	}
	key, err := verifier.Verify(ctx, ref, opts...)
	if err != nil {
		return r.notVerified(obj, err)
	}
	msg := fmt.Sprintf("verified signature of revision %s with key '%s'", ref.DigestStr(), key)
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason, "%s", msg)
	r.EventRecorder.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg)
	return nil
}

// notVerified records SourceVerified=False (and Ready) with the provider in the message, as Flux
// does.
func (r *SourceReconciler) notVerified(obj source, err error) error {
	msg := fmt.Sprintf("failed to verify the signature using provider 'cosign': %s", status.UserMessage(err))
	markFailure(obj, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, msg)
	r.EventRecorder.Event(obj, corev1.EventTypeWarning, sourcev1.VerificationErrorReason, msg)
	return err
}
