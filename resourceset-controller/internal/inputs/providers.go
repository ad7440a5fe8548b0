package inputs

import (
	"fmt"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// FromProviders turns the exported inputs of providers into one group each, named after the
// provider (the Permute strategy nests them under that name) and carrying its identity.
func FromProviders(providers []rsv1.ResourceSetInputProvider) ([]Group, error) {
	groups := make([]Group, 0, len(providers))
	for _, p := range providers {
		in, err := FromAPI(p.Status.ExportedInputs)
		if err != nil {
			return nil, fmt.Errorf("exported inputs of ResourceSetInputProvider '%s/%s': %w", p.Namespace, p.Name, err)
		}
		groups = append(groups, Group{APIVersion: rsv1.GroupVersion.String(), Kind: rsv1.ResourceSetInputProviderKind,
			Namespace: p.Namespace, Name: p.Name, Inputs: in})
	}
	return groups, nil
}
