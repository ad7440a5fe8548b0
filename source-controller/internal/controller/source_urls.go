package controller

import (
	"path"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// The stable links next to each kind's artifact (Storage.Symlink). A GitRepository's status
// does not carry its link's URL.
const (
	latestLink = "latest.tar.gz"
	indexLink  = "index.idx"
)

// signURLs recomputes every artifact URL in obj's status from its path, with the storage's
// current signing key and address: a rotated key (or a new --storage-adv-addr) re-signs each
// object at its next reconcile, and the status patch writes a status whose only change is a URL.
func (r *SourceReconciler) signURLs(obj source) {
	art := obj.GetArtifact()
	r.signURL(obj, art)
	link := func(current, name string) string {
		if current == "" || art == nil || art.URL == "" {
			return ""
		}
		return r.Storage.LinkURL(*art, name)
	}
	switch o := obj.(type) {
	case *sourcev1.GitRepository:
		for _, a := range o.Status.IncludedArtifacts {
			r.signURL(obj, a)
		}
	case *sourcev1.HelmRepository:
		o.Status.URL = link(o.Status.URL, indexLink)
	case *sourcev1.HelmChart:
		o.Status.URL = link(o.Status.URL, latestLink)
	case *sourcev1.OCIRepository:
		o.Status.URL = link(o.Status.URL, latestLink)
	case *sourcev1.Bucket:
		o.Status.URL = link(o.Status.URL, latestLink)
	}
}

// signURL signs the URL of a, an artifact in the status of obj. An artifact outside obj's
// namespace gets no URL: whatever a status says, the controller signs for an object only what
// its namespace may read.
func (r *SourceReconciler) signURL(obj source, a *meta.Artifact) {
	if a == nil || a.Path == "" {
		return
	}
	if !inNamespace(a.Path, obj.GetNamespace()) {
		a.URL = ""
		return
	}
	r.Storage.SetArtifactURL(a)
}

// inNamespace: p is the clean path "<kind>/<namespace>/<name>/<file>" of an artifact of namespace.
func inNamespace(p, namespace string) bool {
	parts := strings.Split(p, "/")
	return path.Clean(p) == p && len(parts) == 4 && parts[1] == namespace
}
