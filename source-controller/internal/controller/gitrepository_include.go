package controller

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-gitops/sluice/shared/artifact"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// requeueInclude is how soon a GitRepository waiting for an include looks again; the include
// getting its artifact wakes it sooner (the GitRepository watch of SetupWithManager).
const requeueInclude = 30 * time.Second

// includedArtifacts reads the artifacts of spec.include, in order. When one is missing it
// records IncludeUnavailable and returns wait: the reconcile waits for it.
func (r *GitRepositoryReconciler) includedArtifacts(ctx context.Context, obj *sourcev1.GitRepository) (arts []*meta.Artifact, wait bool, err error) {
	for _, incl := range obj.Spec.Include {
		name := incl.GitRepositoryRef.Name
		dep := &sourcev1.GitRepository{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: name}, dep); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, false, err
			}
			markFailure(obj, sourcev1.IncludeUnavailableCondition, sourcev1.IncludeNotFoundReason,
				fmt.Sprintf("included GitRepository '%s/%s' not found", obj.Namespace, name))
			return nil, true, nil
		}
		if dep.Status.Artifact == nil {
			markFailure(obj, sourcev1.IncludeUnavailableCondition, sourcev1.IncludeNoArtifactReason,
				fmt.Sprintf("no artifact available for include '%s'", name))
			return nil, true, nil
		}
		arts = append(arts, dep.Status.Artifact.DeepCopy())
	}
	conditions.Delete(obj, sourcev1.IncludeUnavailableCondition)
	return arts, false, nil
}

// includesUnchanged: the included artifacts are those the stored artifact was built with.
func includesUnchanged(obj *sourcev1.GitRepository, arts []*meta.Artifact) bool {
	if len(arts) != len(obj.Status.IncludedArtifacts) {
		return false
	}
	for i, a := range arts {
		b := obj.Status.IncludedArtifacts[i]
		if b == nil || a.Revision != b.Revision || a.Digest != b.Digest {
			return false
		}
	}
	return true
}

// includePath is a fromPath or toPath as a path inside its artifact ("." for the root): a
// leading "/" or "./" is dropped, and a path leading outside is refused.
func includePath(p string) (string, error) {
	rel := path.Clean(strings.TrimPrefix(p, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") || !fs.ValidPath(rel) {
		return "", fmt.Errorf("path '%s' leads outside the artifact", p)
	}
	return rel, nil
}

// includeMounts extracts the included artifacts (from storage, into tmp) and returns the
// directory of each at its toPath. close releases them, after the archive.
func (r *GitRepositoryReconciler) includeMounts(obj *sourcev1.GitRepository, arts []*meta.Artifact, tmp *scratchDir) (mounts map[string]fs.FS, closeAll func(), reason string, err error) {
	var roots []*os.Root
	closeAll = func() {
		for _, root := range roots {
			root.Close()
		}
	}
	mounts = map[string]fs.FS{}
	for i, incl := range obj.Spec.Include {
		name := incl.GitRepositoryRef.Name
		to, err := includePath(incl.GetToPath())
		if err == nil && to == "." {
			err = fmt.Errorf("toPath '%s' is the root of the artifact", incl.GetToPath())
		}
		if err != nil {
			return nil, closeAll, sourcev1.IllegalPathReason, fmt.Errorf("include '%s': %w", name, err)
		}
		from, err := includePath(incl.FromPath)
		if err != nil {
			return nil, closeAll, sourcev1.IllegalPathReason, fmt.Errorf("include '%s': %w", name, err)
		}
		root, err := r.extractInclude(arts[i], from, tmp, i)
		if err != nil {
			return nil, closeAll, sourcev1.CopyFailureReason, fmt.Errorf("failed to copy '%s' include from '%s' to '%s': %w", name, from, to, err)
		}
		roots = append(roots, root)
		mounts[to] = root.FS()
	}
	return mounts, closeAll, "", nil
}

// extractInclude extracts the stored artifact art into tmp and opens its directory from.
func (r *GitRepositoryReconciler) extractInclude(art *meta.Artifact, from string, tmp *scratchDir, i int) (*os.Root, error) {
	base, err := tmp.path()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, "include-"+strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Another replica may have written it: then it comes from the shared store.
	p, err := r.Storage.Localize(context.Background(), *art)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := artifact.Extract(f, dir, artifact.Limits{}); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(from)))
	if err != nil {
		return nil, fmt.Errorf("'%s' is not in the artifact of revision '%s'", from, art.Revision)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("'%s' is not a directory", from)
	}
	return os.OpenRoot(filepath.Join(dir, filepath.FromSlash(from)))
}
