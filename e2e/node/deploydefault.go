package node

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluice-gitops/sluice/e2e/images"
)

// RenderDeployDefault writes into dir an overlay of root's deploy/default that sets the images to
// those of e2e/images (deploy/README.md, Images without a registry), renders it with bin's
// kustomize and returns the rendered file, for `kubectl apply -f`.
func RenderDeployDefault(root, bin, dir string) (string, error) {
	return RenderOverlay(root, bin, dir, nil, "")
}

// RenderOverlay is RenderDeployDefault with components of root's deploy/components and more
// of the kustomization (extra, YAML fields of its own).
func RenderOverlay(root, bin, dir string, components []string, extra string) (string, error) {
	// kustomize takes a kustomization only by a relative path.
	base, err := filepath.Rel(dir, filepath.Join(root, "deploy", "default"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\n", base)
	if len(components) > 0 {
		b.WriteString("components:\n")
		for _, c := range components {
			rel, err := filepath.Rel(dir, filepath.Join(root, "deploy", "components", c))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "  - %s\n", rel)
		}
	}
	b.WriteString(extra)
	b.WriteString("images:\n")
	for _, c := range images.Controllers {
		fmt.Fprintf(&b, "  - {name: ghcr.io/sluice-gitops/%s, newName: %s/%s, newTag: %s}\n", c, images.Repository, c, images.Tag)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(bin, "kustomize"), "build", dir).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kustomize build: %v\n%s", err, out)
	}
	for _, c := range images.Controllers {
		if !bytes.Contains(out, []byte("image: "+images.Ref(c))) {
			return "", fmt.Errorf("the rendered overlay does not run %s", images.Ref(c))
		}
	}
	rendered := filepath.Join(dir, "rendered.yaml")
	return rendered, os.WriteFile(rendered, out, 0o644)
}
