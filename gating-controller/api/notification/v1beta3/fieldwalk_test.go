package v1beta3

import (
	"testing"

	fluxv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"

	"github.com/sluice-gitops/sluice/gating-controller/api/notification/apicompare"
)

// fluxAPI is the import path of Flux's Alert and Provider, at the release of the Receiver's
// (api/notification/v1).
const fluxAPI = "github.com/fluxcd/notification-controller/api/v1beta3"

// Every JSON field of Flux's Alert and Provider is a field of ours, and ours have no other.
func TestFieldsOfFluxAlertAndProvider(t *testing.T) {
	apicompare.Fields(t, "Alert", &fluxv1beta3.Alert{}, &Alert{}, 12)
	apicompare.RoundTrip(t, &fluxv1beta3.Alert{}, &Alert{})
	apicompare.RoundTrip(t, &Alert{}, &fluxv1beta3.Alert{})
	apicompare.Fields(t, "Provider", &fluxv1beta3.Provider{}, &Provider{}, 14)
	apicompare.RoundTrip(t, &fluxv1beta3.Provider{}, &Provider{})
	apicompare.RoundTrip(t, &Provider{}, &fluxv1beta3.Provider{})
}

// The kubebuilder markers of Flux's Alert and Provider are ours: the schemas agree.
func TestMarkersOfFluxAlertAndProvider(t *testing.T) {
	apicompare.Markers(t, fluxAPI, ".", nil)
}
