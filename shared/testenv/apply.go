package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyFile server-side applies, in order, every object of the YAML (or JSON) file at path as
// fieldOwner, taking over conflicting fields, as `kubectl apply --server-side --force-conflicts`
// does, and returns how many objects it applied. The file's documents are decoded with
// apimachinery's YAML-or-JSON decoder; empty documents are skipped.
func ApplyFile(ctx context.Context, c client.Client, path, fieldOwner string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	applied := 0
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return applied, nil
			}
			return applied, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return applied, fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), u.GetName(), path, err)
		}
		applied++
	}
}
