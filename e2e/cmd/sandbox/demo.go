package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// gitURLVar in the examples is replaced by the URL of the demo repository.
const gitURLVar = "${SANDBOX_GIT_URL}"

// repositoryFiles reads the demo repository's files (slash paths to contents) from dir.
func repositoryFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s holds no files", dir)
	}
	return files, err
}

// serveRepository commits the files of dir as the first commit of the repository "demo" of a
// new Git server (stopped by tb.Close), and returns the repository.
func serveRepository(tb *harness.MainTB, dir string) (repo *testserver.Repo, err error) {
	files, err := repositoryFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the demo repository: %w", err)
	}
	// The test servers report failures through tb.Fatal, which panics outside a test.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("starting the Git server: %v", r)
		}
	}()
	srv := testserver.NewGitServer(tb, testserver.Options{})
	repo = srv.NewRepo(tb, "demo")
	repo.Commit(tb, "Sluice demo", files)
	return repo, nil
}

// demoObjects reads the objects of the *.yaml files of dir (the namespace first), with
// ${SANDBOX_GIT_URL} replaced by gitURL.
func demoObjects(dir, gitURL string) ([]*unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		data = bytes.ReplaceAll(data, []byte(gitURLVar), []byte(gitURL))
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if len(u.Object) > 0 {
				objects = append(objects, u)
			}
		}
	}
	sort.SliceStable(objects, func(i, j int) bool {
		return objects[i].GetKind() == "Namespace" && objects[j].GetKind() != "Namespace"
	})
	return objects, nil
}

// applyDemo server-side applies the objects, as a user with kubectl would.
func applyDemo(ctx context.Context, c client.Client, objects []*unstructured.Unstructured) error {
	for _, u := range objects {
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("sluice-sandbox"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// waitReady waits until every object of the Sluice kinds has Ready=True for its current
// generation, and returns those that did not in time, with their Ready message.
func waitReady(ctx context.Context, c client.Client, objects []*unstructured.Unstructured, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		var pending []string
		for _, o := range objects {
			if builtIn(o) {
				continue
			}
			if ok, msg := ready(ctx, c, o); !ok {
				pending = append(pending, fmt.Sprintf("%s/%s: %s", o.GetKind(), o.GetName(), msg))
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return pending
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// builtIn reports whether o is of a Kubernetes kind (the core group, a group without a dot such
// as apps, or one of *.k8s.io such as RBAC's): those have no Ready condition to wait for.
func builtIn(o *unstructured.Unstructured) bool {
	group := o.GroupVersionKind().Group
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// ready reads o and reports whether its Ready condition is True for its generation.
func ready(ctx context.Context, c client.Client, o *unstructured.Unstructured) (bool, string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
		return false, err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		if cond["type"] != "Ready" {
			continue
		}
		observed, _ := cond["observedGeneration"].(int64)
		msg, _ := cond["message"].(string)
		if cond["status"] == "True" && (observed == 0 || observed == u.GetGeneration()) {
			return true, msg
		}
		return false, strings.TrimSpace(msg)
	}
	return false, "not reconciled yet"
}
