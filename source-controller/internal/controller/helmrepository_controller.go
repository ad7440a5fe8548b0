package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// defaultHelmRepositoryInterval applies when spec.interval is unset.
const defaultHelmRepositoryInterval = 10 * time.Minute

// HelmRepositoryReconciler fetches Helm repository indexes and stores them in a compact form
// HelmCharts resolve versions from.
type HelmRepositoryReconciler struct {
	SourceReconciler
	// MaxIndexSize is --helm-index-max-size.
	MaxIndexSize int64
}

// SetupWithManager registers the HelmRepository controller.
func (r *HelmRepositoryReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return setupSource(ctx, mgr, &sourcev1.HelmRepository{},
		func() client.ObjectList { return &sourcev1.HelmRepositoryList{} }, opts, r.Shards, r)
}

// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=helmrepositories/status;helmrepositories/finalizers,verbs=get;update;patch

func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmRepository{}
	return r.reconcile(ctx, req, obj, func() sourceKind {
		interval := obj.Spec.Interval.Duration
		if interval == 0 {
			interval = defaultHelmRepositoryInterval
		}
		interval = jitter.JitteredIntervalDuration(interval)
		k := sourceKind{
			kind: sourcev1.HelmRepositoryKind, suspended: obj.Spec.Suspend, observedGeneration: &obj.Status.ObservedGeneration,
			interval: interval,
			steps:    func(ctx context.Context) (time.Duration, error) { return 0, r.reconcileIndex(ctx, obj) },
			ready:    func() (string, string) { return readyWithColon(obj) },
		}
		if obj.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
			k.withoutArtifact = true
			k.steps = func(context.Context) (time.Duration, error) { return 0, reconcileOCIType(obj) }
		}
		return k
	})
}

// reconcileIndex downloads index.yaml when it changed (package fetch), and stores its compact
// form as the artifact. The previous artifact stays on any failure. The download is in
// helmrepository_fetch.go.
func (r *HelmRepositoryReconciler) reconcileIndex(ctx context.Context, obj *sourcev1.HelmRepository) error {
	ix, remove, err := r.fetchIndex(ctx, obj)
	defer remove()
	switch {
	case err != nil:
		return err
	case ix.NotModified:
		return r.upToDate(ctx, obj)
	}
	prev := obj.Status.Artifact
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

// reconcileOCIType is the whole reconcile of a HelmRepository of type oci: there is no index to
// fetch, HelmCharts resolve and pull their chart from the registry. What an index fetch left
// (an artifact, its conditions) no longer applies.
func reconcileOCIType(obj *sourcev1.HelmRepository) error {
	obj.Status.Artifact, obj.Status.URL = nil, ""
	if err := cloudProvider(obj.Spec.Provider); err != nil {
		conditions.MarkFalse(obj, meta.ReadyCondition, sourcev1.AuthenticationFailedReason, "%s", err)
		return reconcile.TerminalError(err)
	}
	for _, c := range []string{sourcev1.ArtifactInStorageCondition, sourcev1.ArtifactOutdatedCondition,
		sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition} {
		conditions.Delete(obj, c)
	}
	conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason,
		"Helm repository of type oci: charts are resolved from the registry by each HelmChart")
	return nil
}
