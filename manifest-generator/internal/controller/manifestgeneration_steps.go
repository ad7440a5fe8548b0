package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/fluxapi"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// sourceGroupVersion is the API of the sources the generation reads (source-controller's).
var sourceGroupVersion = fluxapi.SourceV1.String()

// newSource is an empty object of the source kind, read through the CRD contract (the
// manifest-generator does not import the source-controller).
func newSource(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sourceGroupVersion)
	u.SetKind(kind)
	return u
}

// sourceArtifact reads the artifact of spec.sourceRef (the artifact contract of the
// source-controller, shared/artifact); waitMsg says why there is none yet.
func (r *ManifestGenerationReconciler) sourceArtifact(ctx context.Context, obj *generatorv1.ManifestGeneration) (meta.Artifact, string, error) {
	ref := obj.Spec.SourceRef
	src := newSource(ref.Kind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return meta.Artifact{}, fmt.Sprintf("%s '%s/%s' not found", ref.Kind, obj.Namespace, ref.Name), nil
		}
		return meta.Artifact{}, "", err
	}
	art, err := artifact.FromObject(src)
	if err != nil {
		return meta.Artifact{}, "", err
	}
	if art == nil || art.URL == "" || art.Digest == "" {
		return meta.Artifact{}, fmt.Sprintf("%s '%s/%s' has no artifact yet", ref.Kind, obj.Namespace, ref.Name), nil
	}
	return *art, "", nil
}
