package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/gatesapi"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

// A committed change is live only once the ManifestGeneration applies it. While the gates of
// the generation, or of the GitRepository it reads, hold it, the ManifestUpdate is not Ready:
// Ready=False, reason GateClosed, says what holds it. It turns Ready when they open (the
// controller watches both).

// markCommitted records that commit is on branch: Ready, or GateClosed while gates hold the
// generation that applies it.
func (r *ManifestUpdateReconciler) markCommitted(ctx context.Context, obj *generatorv1.ManifestUpdate, t update.Target) error {
	msg := committedMessage(obj, t)
	held := ""
	if t.Branch == t.Base { // a change pushed to another branch waits for its merge, not for gates
		var err error
		if held, err = r.heldBy(ctx, obj, t.RepoName); err != nil {
			return err
		}
	}
	if held != "" {
		conditions.MarkFalse(obj, meta.ReadyCondition, gatesapi.GateClosedReason, "%s; not applied yet: %s", msg, held)
		return nil
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, generatorv1.CommittedReason, "%s", msg)
	return nil
}

// committedMessage says where the change was pushed, and in which pull request it is proposed.
func committedMessage(obj *generatorv1.ManifestUpdate, t update.Target) string {
	msg := fmt.Sprintf("committed %s to %s", obj.Status.Commit, t.Branch)
	if pr := obj.Status.PullRequest; pr != nil {
		msg += fmt.Sprintf(", proposed in pull request #%d into %s", pr.Number, pr.Base)
		if pr.URL != "" {
			msg += ": " + pr.URL
		}
	}
	return msg
}

// heldBy names what holds the update's generation: its own gates, else those of its
// GitRepository; "" when nothing does.
func (r *ManifestUpdateReconciler) heldBy(ctx context.Context, obj *generatorv1.ManifestUpdate, repoName string) (string, error) {
	gen := &generatorv1.ManifestGeneration{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.GenerationRef.Name}, gen); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if st := gen.Status.Gates; st != nil && st.HeldSince != nil {
		return fmt.Sprintf("ManifestGeneration '%s' is held by its gates: %s", gen.Name, st.State), nil
	}
	repo := newSource(generatorv1.GitRepositoryKind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: repoName}, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	if held, ok, _ := unstructured.NestedString(repo.Object, "status", "gates", "heldSince"); ok && held != "" {
		state, _, _ := unstructured.NestedString(repo.Object, "status", "gates", "state")
		return fmt.Sprintf("GitRepository '%s' is held by its gates: %s", repoName, state), nil
	}
	return "", nil
}

// committed: the change of the current spec is pushed; only whether it is held can change.
func committed(obj *generatorv1.ManifestUpdate) bool {
	if obj.Status.Commit == "" || obj.Status.ObservedGeneration != obj.Generation {
		return false
	}
	ready := conditions.Get(obj, meta.ReadyCondition)
	return ready != nil && ready.ObservedGeneration == obj.Generation &&
		(ready.Reason == generatorv1.CommittedReason || ready.Reason == gatesapi.GateClosedReason)
}
