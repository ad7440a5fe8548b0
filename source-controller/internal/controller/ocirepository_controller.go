package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/sizelimit"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// OCIRepositoryReconciler pulls OCI artifacts (go-containerregistry) and serves their content.
type OCIRepositoryReconciler struct {
	SourceReconciler
	// MaxLayerSize bounds the size of the layer pulled (--oci-max-layer-size); 0 means no limit.
	MaxLayerSize int64
}

// DefaultMaxLayerSize is the default of --oci-max-layer-size: the default --artifact-max-size, as
// a copied layer is the artifact.
const DefaultMaxLayerSize int64 = 256 << 20

// SetupWithManager registers the OCIRepository controller.
func (r *OCIRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return setupSource(ctx, mgr, &sourcev1.OCIRepository{},
		func() client.ObjectList { return &sourcev1.OCIRepositoryList{} }, opts, r.Shards, r)
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=ocirepositories/status;ocirepositories/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch

func (r *OCIRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.OCIRepository{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		return sourceKind{
			kind: sourcev1.OCIRepositoryKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration),
			steps:    func(ctx context.Context) (time.Duration, error) { return 0, r.reconcileArtifact(ctx, obj) },
			ready: func() (string, string) {
				return meta.SucceededReason, fmt.Sprintf("stored artifact for digest '%s'", obj.GetArtifact().Revision)
			},
		}
	})
}

// reconcileArtifact resolves the reference to a manifest digest and, when it is not the
// stored revision, pulls the selected layer and stores it. What reaches the registry is in
// ocirepository_fetch.go, the signature check in ocirepository_verify.go.
func (r *OCIRepositoryReconciler) reconcileArtifact(ctx context.Context, obj *sourcev1.OCIRepository) error {
	timeout := defaultTimeout
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	opts, err := r.remoteOptions(ctx, obj)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	repoName := strings.TrimPrefix(obj.Spec.URL, "oci://")
	nameOpts := []name.Option{}
	if obj.Spec.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	repo, err := name.NewRepository(repoName, nameOpts...)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(fmt.Errorf("URL '%s': %w", obj.Spec.URL, err)))
	}
	tag, ref, err := r.resolve(ctx, obj, repo, nameOpts, opts)
	if err != nil {
		return err
	}
	desc, err := remote.Get(ref, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("failed to get the manifest of '%s': %w", ref, err))
	}
	revision := desc.Digest.String()
	if tag != "" {
		revision = tag + "@" + revision
	}
	selector := obj.Spec.LayerSelector
	a := obj.Status.Artifact
	stored := a != nil && a.Revision == revision && ignoreEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) &&
		selectorEqual(selector, obj.Status.ObservedLayerSelector)
	if err := r.verifyManifest(ctx, obj, stored, repo.Digest(desc.Digest.String()), opts); err != nil {
		return err
	}
	if stored {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		return nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new revision '%s'", revision)

	manifest, blob, err := r.pullLayer(obj, desc, ref, selector)
	if err != nil {
		return err
	}
	defer blob.Close()
	// What an earlier attempt failed to fetch no longer matters: this attempt says.
	conditions.Delete(obj, sourcev1.FetchFailedCondition)

	art := r.Storage.NewArtifactFor(sourcev1.OCIRepositoryKind, obj, revision, desc.Digest.Hex+".tar.gz")
	art.Metadata = manifest.Annotations
	layerReader := sizelimit.Reader(blob, r.MaxLayerSize, r.layerTooLarge(r.MaxLayerSize, true))
	if err := r.storeLayer(obj, &art, layerReader, selector); err != nil {
		return err
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	url, err := r.storeArtifact(obj, art, latestLink, sourcev1.NewArtifactReason, fmt.Sprintf("stored artifact with revision '%s' from '%s'", revision, obj.Spec.URL))
	if err != nil {
		return err
	}
	obj.Status.URL = url
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedLayerSelector = selector
	return nil
}

// pullLayer starts the download of the artifact's layer that the selector picks, once the
// manifest says its size is within the limit: the blob is read by the caller.
func (r *OCIRepositoryReconciler) pullLayer(obj *sourcev1.OCIRepository, desc *remote.Descriptor, ref name.Reference,
	selector *sourcev1.OCILayerSelector) (*v1.Manifest, io.ReadCloser, error) {
	img, err := desc.Image()
	if err != nil {
		return nil, nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("'%s' is not an OCI artifact: %w", ref, err))
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("reading the manifest of '%s': %w", ref, err))
	}
	layer, err := selectLayer(img, manifest, selector)
	if err != nil {
		return nil, nil, r.fetchFailed(obj, sourcev1.OCILayerOperationFailedReason, reconcile.TerminalError(err))
	}
	// Refused before the download by the size the manifest gives, and bounded while reading as
	// the registry may send more.
	size, err := layer.Size()
	if err != nil {
		return nil, nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("reading the layer size of '%s': %w", ref, err))
	}
	if r.MaxLayerSize > 0 && size > r.MaxLayerSize {
		return nil, nil, r.fetchFailed(obj, sourcev1.SourceTooLargeReason, fmt.Errorf("pulling the layer of '%s': %w", ref, r.layerTooLarge(size, false)))
	}
	blob, err := layer.Compressed()
	if err != nil {
		return nil, nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("pulling the layer of '%s': %w", ref, err))
	}
	return manifest, blob, nil
}

// storeLayer stores the layer as is (copy) or extracts it and archives its content with the
// ignore rules (extract, the default).
func (r *OCIRepositoryReconciler) storeLayer(obj *sourcev1.OCIRepository, art *meta.Artifact, blob io.Reader, selector *sourcev1.OCILayerSelector) error {
	if selector != nil && selector.Operation == sourcev1.OCILayerCopy {
		if err := r.Storage.Copy(art, blob); err != nil {
			if errors.Is(err, errLayerTooLarge) {
				return r.fetchFailed(obj, sourcev1.SourceTooLargeReason, fmt.Errorf("storing the layer: %w", err))
			}
			return r.storageFailed(obj, storageReason(err), fmt.Errorf("storing the layer: %w", err))
		}
		return nil
	}
	dir, remove, err := contentDir("ocirepository-*")
	if err != nil {
		return err
	}
	defer remove()
	if err := artifact.Extract(blob, dir, artifact.Limits{}); err != nil {
		reason := sourcev1.OCILayerOperationFailedReason
		if errors.Is(err, errLayerTooLarge) {
			reason = sourcev1.SourceTooLargeReason
		}
		return r.fetchFailed(obj, reason, fmt.Errorf("extracting the layer: %w", err))
	}
	filter, err := storage.IgnoreFilter(dir, obj.Spec.Ignore)
	if err != nil {
		return r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, err)
	}
	if err := r.Storage.Archive(art, dir, filter); err != nil {
		return r.storageFailed(obj, storageReason(err), fmt.Errorf("archiving the layer's content: %w", err))
	}
	return nil
}

func selectorEqual(a, b *sourcev1.OCILayerSelector) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
