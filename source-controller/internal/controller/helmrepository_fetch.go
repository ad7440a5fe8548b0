package controller

import (
	"context"
	"errors"
	"os"

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

// fetchIndex downloads index.yaml (package fetch) into a temporary directory that remove
// deletes, with a conditional GET on the validators of the stored artifact: ix.NotModified when
// the server says the stored index is current. A failure is recorded (FetchFailed) and returned.
func (r *HelmRepositoryReconciler) fetchIndex(ctx context.Context, obj *sourcev1.HelmRepository) (ix *fetch.Index, remove func(), err error) {
	remove = func() {}
	if _, err := fetch.IndexURL(obj.Spec.URL); err != nil {
		return nil, remove, r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	}
	access, err := r.helmRepositoryAccess(ctx, obj)
	if err != nil {
		return nil, remove, r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	timeout := defaultTimeout
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	fetchCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "helmrepository-*")
	if err != nil {
		return nil, remove, err
	}
	remove = func() { os.RemoveAll(tmp) }

	req := fetch.Request{URL: obj.Spec.URL, Username: access.Username, Password: access.Password, MaxSize: r.MaxIndexSize}
	if prev := obj.Status.Artifact; prev != nil {
		req.Stored = &fetch.Validators{ETag: prev.Metadata[metaETag], LastModified: prev.Metadata[metaLastModified]}
	}
	ix, err = fetch.Get(fetchCtx, access.Client(), req, tmp)
	switch {
	case errors.Is(err, fetch.ErrInvalidURL):
		return nil, remove, r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	case fetch.Unauthorized(err):
		return nil, remove, r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	case err != nil:
		return nil, remove, r.fetchFailed(obj, sourcev1.IndexationFailedReason, err)
	}
	return ix, remove, nil
}
