package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// releaseName names the release of image to one container of a workload: readable (workload,
// container, tag) and unique to the three (a hash), so that a release is created once and a
// failed one is not created again while it exists.
func releaseName(c automatedContainer, tag string) string {
	sum := sha256.Sum256([]byte(c.ref.String() + "\x00" + c.container + "\x00" + tag))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	base := dnsUnsafe.ReplaceAllString(strings.ToLower(c.ref.Name+"-"+c.container+"-"+tag), "-")
	base = strings.Trim(base, "-.")
	if max := 63 - len(suffix); len(base) > max {
		base = strings.TrimRight(base[:max], "-.")
	}
	return base + suffix
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9.-]+`)

// release creates the ManifestUpdate that writes image into the container, owned by the
// generation and labelled as automated. created is false when it exists already (released
// before, or failed: it is not retried by creating it again).
func (r *ManifestGenerationReconciler) release(ctx context.Context, gen *generatorv1.ManifestGeneration,
	c automatedContainer, tag, image string) (name string, created bool, err error) {
	mu := &generatorv1.ManifestUpdate{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: gen.Namespace,
			Name:      releaseName(c, tag),
			Labels:    map[string]string{generatorv1.AutomatedLabel: "true", generatorv1.GenerationLabel: gen.Name},
		},
		Spec: generatorv1.ManifestUpdateSpec{
			GenerationRef: meta.LocalObjectReference{Name: gen.Name},
			Workload:      c.ref.String(),
			ContainerImage: &generatorv1.ContainerImageUpdate{
				Container: c.container,
				Image:     image,
			},
		},
	}
	if err := controllerutil.SetOwnerReference(gen, mu, r.Scheme()); err != nil {
		return "", false, err
	}
	err = r.Create(ctx, mu, client.FieldOwner(ControllerName))
	if apierrors.IsAlreadyExists(err) {
		return mu.Name, false, nil
	}
	return mu.Name, err == nil, err
}
