package update

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/copyback"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// copyBack copies what the updaters changed in the session's copy of the clone into the clone,
// after checking (package copyback) that every change is an edit of an existing regular file
// inside the target path: an updater that adds, removes or links files, or writes outside the
// target path (a .git/config, another directory's manifests), gets nothing pushed; so does one
// that changed more than the runner sends back.
func (c *change) copyBack(ctx context.Context) ([]copyback.File, error) {
	changes, err := c.session.Changes(ctx)
	var over *runner.ChangeLimitError
	if errors.As(err, &over) {
		return nil, verificationFailed("nothing was pushed: %s", err.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("reading what the updaters changed: %w", err)
	}
	root, err := os.OpenRoot(c.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	files, err := copyback.Check(root, c.req.Target.Path, changes)
	var refused *copyback.RefusedError
	if errors.As(err, &refused) {
		return nil, verificationFailed("the updaters changed files outside the change, nothing was pushed: %s", refused.Error())
	}
	if err != nil {
		return nil, err
	}
	return files, copyback.Write(root, files)
}

// checkEachFileCounts makes sure that, when the updaters changed several files, each of them
// takes part in the change: with that file alone put back, the manifests must differ from those
// after the change. A file that changes nothing in the manifests would otherwise be committed
// under the bot's name without anybody asking for it. One changed file needs no check: the
// verification already showed that it makes the change.
func (c *change) checkEachFileCounts(ctx context.Context, copied []copyback.File, after []*unstructured.Unstructured) error {
	if len(copied) < 2 {
		return nil
	}
	var idle []string
	for _, f := range copied {
		if err := c.session.WriteFile(ctx, f.Path, f.Previous, f.Mode); err != nil {
			return err
		}
		without, err := c.manifests(ctx)
		if err != nil {
			return verificationFailed("the manifests of path '%s' cannot be generated without the change of %s: %s", c.req.Target.Path, f.Path, err.Error())
		}
		if reflect.DeepEqual(objectMap(without.objects), objectMap(after)) {
			idle = append(idle, f.Path)
		}
		if err := c.session.WriteFile(ctx, f.Path, f.Data, f.Mode); err != nil {
			return err
		}
	}
	if len(idle) > 0 {
		return verificationFailed("the updaters changed files that take no part in the change, nothing was pushed: %s", strings.Join(idle, ", "))
	}
	return nil
}

func objectMap(objs []*unstructured.Unstructured) map[string]map[string]any {
	m := make(map[string]map[string]any, len(objs))
	for _, o := range objs {
		m[describe(o)+"|"+o.GetAPIVersion()] = o.Object
	}
	return m
}
