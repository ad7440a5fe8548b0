package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/fetch"
)

// Artifact metadata keys of a HelmRepository: the validators of the index download, so the next
// check is a conditional GET that an unchanged index answers with 304.
const (
	metaETag         = "etag"
	metaLastModified = "last-modified"
)

// reconcileIndex downloads index.yaml when it changed (package fetch), and stores its compact
// form as the artifact. The previous artifact stays on any failure.
func (r *HelmRepositoryReconciler) reconcileIndex(ctx context.Context, obj *sourcev1.HelmRepository) error {
	if _, err := fetch.IndexURL(obj.Spec.URL); err != nil {
		return r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	}
	access, err := r.helmRepositoryAccess(ctx, obj)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	timeout := defaultTimeout
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	fetchCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "helmrepository-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	req := fetch.Request{URL: obj.Spec.URL, Username: access.Username, Password: access.Password, MaxSize: r.MaxIndexSize}
	prev := obj.Status.Artifact
	if prev != nil {
		req.Stored = &fetch.Validators{ETag: prev.Metadata[metaETag], LastModified: prev.Metadata[metaLastModified]}
	}
	ix, err := fetch.Get(fetchCtx, access.Client(), req, tmp)
	switch {
	case errors.Is(err, fetch.ErrInvalidURL):
		return r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	case fetch.Unauthorized(err):
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	case err != nil:
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, err)
	case ix.NotModified:
		return r.upToDate(ctx, obj)
	}
	validators := map[string]string{metaETag: ix.Validators.ETag, metaLastModified: ix.Validators.LastModified}
	if prev != nil && prev.Revision == ix.Digest {
		prev.Metadata = validators
		return r.upToDate(ctx, obj)
	}
	msg := fmt.Sprintf("new index revision '%s'", ix.Digest)
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "%s", msg)

	compact, stats, err := ix.Compact()
	if err != nil {
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, err)
	}
	defer compact.Close()
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	art := r.Storage.NewArtifactFor(sourcev1.HelmRepositoryKind, obj, ix.Digest, "index-"+strings.TrimPrefix(ix.Digest, "sha256:")[:16]+".idx")
	art.Metadata = validators
	if err := r.Storage.Copy(&art, compact); err != nil {
		return r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("storing the index: %w", err))
	}
	link, err := r.storeArtifact(obj, art, indexLink, sourcev1.NewArtifactReason,
		fmt.Sprintf("stored fetched index of %d charts and %d versions", stats.Charts, stats.Versions))
	if err != nil {
		return err
	}
	obj.Status.URL = link
	return nil
}

func (r *HelmRepositoryReconciler) upToDate(ctx context.Context, obj *sourcev1.HelmRepository) error {
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	log.FromContext(ctx).Info(fmt.Sprintf("artifact up-to-date with remote revision: '%s'", obj.Status.Artifact.Revision))
	return nil
}
