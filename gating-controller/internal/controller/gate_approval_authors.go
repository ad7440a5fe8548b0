package controller

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/fluxapi"
)

// The authors of a revision are read from the artifacts of the sources of the gate's namespace.
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets;externalartifacts,verbs=get;list

// authorSources are the kinds whose artifact may name the authors of its revision
// (shared/artifact.AuthorEmails), in the source API the gating-controller reads by contract.
var authorSources = []string{"GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"}

// revisionAuthors are the e-mail addresses of the authors of revision, as the artifacts of
// that revision in namespace name them: none when no source there has it as its artifact or
// says who wrote it. Kinds whose CRD is not installed are skipped.
func revisionAuthors(ctx context.Context, reader client.Reader, namespace, revision string) ([]string, error) {
	var authors []string
	for _, kind := range authorSources {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(fluxapi.SourceV1.String())
		list.SetKind(kind + "List")
		if err := reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
			if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading the %ss of namespace '%s' for the authors of revision '%s': %w", kind, namespace, revision, err)
		}
		for i := range list.Items {
			art, err := artifact.FromObject(&list.Items[i])
			if err != nil || art == nil || art.Revision != revision {
				continue
			}
			authors = append(authors, artifact.AuthorEmails(art)...)
		}
	}
	slices.Sort(authors)
	return slices.Compact(authors), nil
}
