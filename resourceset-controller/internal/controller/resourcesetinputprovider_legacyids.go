package controller

import (
	"fmt"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// keepLegacyIDs lets the inputs the provider exported before Sluice took flux-operator's ids
// keep the ids they had (inputs.KeepLegacyIDs), so that objects named after them are not
// deleted and recreated by an upgrade; inputs new since get flux-operator's ids. Types whose
// ids did not change (requests, environments, ExternalService) are left as they are.
func keepLegacyIDs(obj *rsv1.ResourceSetInputProvider, list []map[string]any, defaults map[string]any) error {
	legacyOf := legacyIDFunc(obj.Spec.Type, defaults)
	if legacyOf == nil || len(obj.Status.ExportedInputs) == 0 {
		return nil
	}
	previous, err := inputs.FromAPI(obj.Status.ExportedInputs)
	if err != nil {
		return fmt.Errorf("status.exportedInputs: %w", err)
	}
	inputs.KeepLegacyIDs(list, previous, legacyOf)
	return nil
}

// legacyIDFunc is how Sluice made the id of an input of the type before: the legacy hash of the
// string flux-operator's id is now made from. Nil for the types whose ids did not change.
func legacyIDFunc(providerType string, defaults map[string]any) func(map[string]any) string {
	field := func(key string) func(map[string]any) string {
		return func(in map[string]any) string {
			if s, ok := in[key].(string); ok && s != "" {
				return inputs.LegacyID(s)
			}
			return ""
		}
	}
	switch providerType {
	case rsv1.InputProviderStatic:
		id := inputs.LegacyStaticID(defaults)
		return func(map[string]any) string { return id }
	case rsv1.InputProviderOCIArtifactTag:
		return field("tag")
	case rsv1.InputProviderExternalArtifact:
		return func(in map[string]any) string {
			ns, _ := in["namespace"].(string)
			name, _ := in["name"].(string)
			return inputs.LegacyID(ns + "/" + name)
		}
	}
	if kind, ok := forge.KindOf(providerType); ok && kind == forge.Branches {
		return field("branch")
	} else if ok && kind == forge.Tags {
		return field("tag")
	}
	return nil
}
