package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/status/statustest"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// ManifestGenerations and ManifestUpdates follow the start every reconciler shares
// (shared/status.Preamble): Reconciling for a new generation and the request echoed; a
// ManifestGeneration's finalizer is added and its request echoed also while suspended. Their
// sources and generations do not exist: the rules hold whatever the steps do.
func TestGeneratorKindsFollowTheSharedRules(t *testing.T) {
	for _, tc := range []struct {
		kind string
		rk   statustest.RulesKind
	}{{
		kind: generatorv1.ManifestGenerationKind,
		rk: statustest.RulesKind{
			New: func(ns, name string) client.Object {
				return &generatorv1.ManifestGeneration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: generatorv1.ManifestGenerationSpec{Interval: metav1.Duration{Duration: time.Hour},
						SourceRef: generatorv1.SourceReference{Kind: generatorv1.GitRepositoryKind, Name: "missing"}}}
			},
			Finalizer: generatorv1.Finalizer,
			Suspend:   func(obj client.Object) { obj.(*generatorv1.ManifestGeneration).Spec.Suspend = true },
		},
	}, {
		kind: generatorv1.ManifestUpdateKind,
		rk: statustest.RulesKind{
			New: func(ns, name string) client.Object {
				return &generatorv1.ManifestUpdate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: generatorv1.ManifestUpdateSpec{GenerationRef: meta.LocalObjectReference{Name: "missing"},
						Workload:       ns + ":deployment/app",
						ContainerImage: &generatorv1.ContainerImageUpdate{Container: "app", Image: "ghcr.io/org/app:1.0.0"}}}
			},
		},
	}} {
		t.Run(tc.kind, func(t *testing.T) { statustest.CheckRules(t, k8s, env.Config, tc.rk) })
	}
}
