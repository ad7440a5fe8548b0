package controller

import (
	"slices"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// contentUnchanged: the spec fields that shape the artifact's content, besides the commit, are
// those the stored artifact was built with (status.observed*). A change of one rebuilds the
// artifact of the same commit.
func contentUnchanged(obj *sourcev1.GitRepository) bool {
	return ignoreEqual(obj.Spec.Ignore, obj.Status.ObservedIgnore) &&
		slices.Equal(obj.Spec.SparseCheckout, obj.Status.ObservedSparseCheckout) &&
		slices.Equal(obj.Spec.Include, obj.Status.ObservedInclude) &&
		obj.Spec.RecurseSubmodules == obj.Status.ObservedRecurseSubmodules
}

// observeContent records, with a new artifact, the spec fields it was built with.
func observeContent(obj *sourcev1.GitRepository) {
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedSparseCheckout = obj.Spec.SparseCheckout
	obj.Status.ObservedInclude = obj.Spec.Include
	obj.Status.ObservedRecurseSubmodules = obj.Spec.RecurseSubmodules
}
