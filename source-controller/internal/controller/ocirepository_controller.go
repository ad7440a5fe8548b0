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
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/secrets"

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

// errLayerTooLarge is wrapped by the error of a layer over --oci-max-layer-size.
var errLayerTooLarge = errors.New("OCI layer is over --oci-max-layer-size")

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
		}
	})
}

// reconcileArtifact resolves the reference to a manifest digest and, when it is not the
// stored revision, pulls the selected layer and stores it.
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
	if !stored || obj.Spec.Verify == nil || needsVerification(obj, obj.Spec.Verify) {
		if err := r.verifySignature(ctx, obj, obj.Spec.Verify, repo.Digest(desc.Digest.String()), opts); err != nil {
			return err
		}
	}
	if stored {
		conditions.Delete(obj, sourcev1.FetchFailedCondition)
		conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
		return nil
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "new revision '%s'", revision)

	img, err := desc.Image()
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("'%s' is not an OCI artifact: %w", ref, err))
	}
	manifest, err := img.Manifest()
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("reading the manifest of '%s': %w", ref, err))
	}
	layer, err := selectLayer(img, manifest, selector)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCILayerOperationFailedReason, reconcile.TerminalError(err))
	}
	// Refused before the download by the size the manifest gives, and bounded while reading as
	// the registry may send more.
	size, err := layer.Size()
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("reading the layer size of '%s': %w", ref, err))
	}
	if r.MaxLayerSize > 0 && size > r.MaxLayerSize {
		return r.fetchFailed(obj, sourcev1.SourceTooLargeReason, fmt.Errorf("pulling the layer of '%s': %w", ref, r.layerTooLarge(size, false)))
	}
	blob, err := layer.Compressed()
	if err != nil {
		return r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("pulling the layer of '%s': %w", ref, err))
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

// resolve turns spec.ref into a reference: the digest, else the highest tag in the semver
// range, else the tag (default latest). tag is "" for a digest reference.
func (r *OCIRepositoryReconciler) resolve(ctx context.Context, obj *sourcev1.OCIRepository, repo name.Repository,
	nameOpts []name.Option, opts []remote.Option) (string, name.Reference, error) {
	ref := obj.Spec.Reference
	if ref == nil {
		ref = &sourcev1.OCIRepositoryRef{}
	}
	switch {
	case ref.Digest != "":
		d, err := name.NewDigest(repo.String()+"@"+ref.Digest, nameOpts...)
		if err != nil {
			return "", nil, r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(fmt.Errorf("digest '%s': %w", ref.Digest, err)))
		}
		return "", d, nil
	case ref.SemVer != "":
		tags, err := remote.List(repo, append(opts, remote.WithContext(ctx))...)
		if err != nil {
			return "", nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, fmt.Errorf("listing the tags of '%s': %w", obj.Spec.URL, err))
		}
		if ref.SemverFilter != "" {
			if tags, err = filterTags(tags, ref.SemverFilter); err != nil {
				return "", nil, r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
			}
		}
		best, err := highestTag(tags, ref.SemVer)
		if errors.Is(err, errNoTagInRange) && ref.SemverFilter != "" {
			err = fmt.Errorf("no tag matching semverFilter '%s' is in the semver range '%s'", ref.SemverFilter, ref.SemVer)
		} else if errors.Is(err, errNoTagInRange) {
			err = fmt.Errorf("no tag matches the semver range '%s'", ref.SemVer)
		}
		if err != nil {
			return "", nil, r.fetchFailed(obj, sourcev1.OCIPullFailedReason, reconcile.TerminalError(err))
		}
		t, err := name.NewTag(repo.String()+":"+best, nameOpts...)
		return best, t, err
	default:
		tag := ref.Tag
		if tag == "" {
			tag = "latest"
		}
		t, err := name.NewTag(repo.String()+":"+tag, nameOpts...)
		if err != nil {
			return "", nil, r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(fmt.Errorf("tag '%s': %w", tag, err)))
		}
		return tag, t, nil
	}
}

// layerTooLarge is the error of a layer of size bytes (more, when partial).
func (r *OCIRepositoryReconciler) layerTooLarge(size int64, partial bool) error {
	return &sizelimit.Error{What: "OCI layer", Size: size, Partial: partial, Flag: "--oci-max-layer-size", Limit: r.MaxLayerSize, Err: errLayerTooLarge}
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

// remoteOptions are the registry credentials of spec.secretRef and of the imagePullSecrets of
// spec.serviceAccountName (docker-config Secrets, in that order), and the transport of
// spec.certSecretRef and spec.proxySecretRef.
func (r *OCIRepositoryReconciler) remoteOptions(ctx context.Context, obj *sourcev1.OCIRepository) ([]remote.Option, error) {
	if err := cloudProvider(obj.Spec.Provider); err != nil {
		return nil, reconcile.TerminalError(err)
	}
	var secretNames []string
	if obj.Spec.SecretRef != nil {
		secretNames = append(secretNames, obj.Spec.SecretRef.Name)
	}
	if name := obj.Spec.ServiceAccountName; name != "" {
		sa := &corev1.ServiceAccount{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, sa); err != nil {
			return nil, fmt.Errorf("reading ServiceAccount '%s/%s': %w", obj.Namespace, name, err)
		}
		for _, s := range sa.ImagePullSecrets {
			secretNames = append(secretNames, s.Name)
		}
	}
	keychain := &secrets.Registries{}
	for _, name := range secretNames {
		data, err := r.secretData(ctx, obj.Namespace, name)
		if err != nil {
			return nil, err
		}
		if err := keychain.Add(data); err != nil {
			return nil, fmt.Errorf("secret '%s/%s': %w", obj.Namespace, name, err)
		}
	}
	// A Secret named for this source that has nothing for it is a mistake to report, not an
	// anonymous pull.
	repo := strings.TrimPrefix(obj.Spec.URL, "oci://")
	if _, found := keychain.Lookup(repo); !found && obj.Spec.SecretRef != nil {
		return nil, fmt.Errorf("secret '%s/%s' has no credentials for '%s'", obj.Namespace, obj.Spec.SecretRef.Name, repo)
	}
	opts := []remote.Option{remote.WithAuthFromKeychain(keychain)}
	if obj.Spec.CertSecretRef != nil || obj.Spec.ProxySecretRef != nil {
		t, err := r.secretTransport(ctx, obj.Namespace, obj.Spec.CertSecretRef, obj.Spec.ProxySecretRef)
		if err != nil {
			return nil, err
		}
		opts = append(opts, remote.WithTransport(t))
	}
	return opts, nil
}

// selectLayer is the first layer of the media type (or the first layer).
func selectLayer(img v1.Image, manifest *v1.Manifest, selector *sourcev1.OCILayerSelector) (v1.Layer, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for i, l := range manifest.Layers {
		if selector == nil || selector.MediaType == "" || string(l.MediaType) == selector.MediaType {
			return layers[i], nil
		}
	}
	if selector != nil && selector.MediaType != "" {
		return nil, fmt.Errorf("the artifact has no layer of media type '%s'", selector.MediaType)
	}
	return nil, errors.New("the artifact has no layers")
}

func selectorEqual(a, b *sourcev1.OCILayerSelector) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
