package v1

import (
	"testing"

	fluxv1 "github.com/fluxcd/notification-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/gating-controller/api/notification/apicompare"
)

// fluxAPI is the import path of Flux's own Receiver type, a test dependency of this module at the
// release of Flux's kustomize-controller pinned in e2e/tools/versions.mk (KUSTOMIZE_CONTROLLER_VERSION
// v1.9.6: notification-controller/api v1.9.4, the same Flux release).
const fluxAPI = "github.com/fluxcd/notification-controller/api/v1"

// Every JSON field of Flux's Receiver is a field of ours, with the same name and the same
// omission when empty, and ours has no other: a Receiver with every field set, Flux's or ours,
// reads strictly into the other type and writes back the same JSON.
func TestFieldsOfFluxReceiver(t *testing.T) {
	apicompare.Fields(t, "Receiver", &fluxv1.Receiver{}, &Receiver{}, 25)
	apicompare.RoundTrip(t, &fluxv1.Receiver{}, &Receiver{})
	apicompare.RoundTrip(t, &Receiver{}, &fluxv1.Receiver{})
}

// The kubebuilder markers of Flux's types are ours. An Enum of ours may accept more values than
// Flux's (spec.type takes gitea; resources[].kind takes Sluice's kinds), never fewer.
func TestMarkersOfFluxReceiver(t *testing.T) {
	apicompare.Markers(t, fluxAPI, ".", map[string][]string{
		"ReceiverSpec.Type":                  {"gitea"},
		"CrossNamespaceObjectReference.Kind": {"ManifestGeneration", "ResourceSet", "ResourceSetInputProvider"},
	})
}

// The webhook path is Flux's: /hook/ and the hex SHA-256 of token, name and namespace.
func TestWebhookPathIsFlux(t *testing.T) {
	for _, tc := range []struct{ token, name, namespace string }{
		{"s3cr3t", "github-receiver", "flux-system"},
		{"", "r", "default"},
		{"a token with spaces", "a.b-c", "team-1"},
	} {
		theirs := &fluxv1.Receiver{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.namespace}}
		ours := &Receiver{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.namespace}}
		if got, want := ours.GetWebhookPath(tc.token), theirs.GetWebhookPath(tc.token); got != want {
			t.Errorf("path of %+v: ours %s, Flux's %s", tc, got, want)
		}
	}
	// A known value, so that the formula is pinned even if both changed.
	r := &Receiver{ObjectMeta: metav1.ObjectMeta{Name: "github-receiver", Namespace: "flux-system"}}
	if got, want := r.GetWebhookPath("s3cr3t"), "/hook/"+sha256Hex("s3cr3tgithub-receiverflux-system"); got != want {
		t.Errorf("path: %s, want %s", got, want)
	}
}
