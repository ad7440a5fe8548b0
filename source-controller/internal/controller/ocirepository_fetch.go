package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/secrets"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/sizelimit"
)

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

// errLayerTooLarge is wrapped by the error of a layer over --oci-max-layer-size.
var errLayerTooLarge = errors.New("OCI layer is over --oci-max-layer-size")

// layerTooLarge is the error of a layer of size bytes (more, when partial).
func (r *OCIRepositoryReconciler) layerTooLarge(size int64, partial bool) error {
	return &sizelimit.Error{What: "OCI layer", Size: size, Partial: partial, Flag: "--oci-max-layer-size", Limit: r.MaxLayerSize, Err: errLayerTooLarge}
}
