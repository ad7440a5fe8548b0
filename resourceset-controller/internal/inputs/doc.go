// Package inputs produces the inputs a ResourceSet renders its templates with: it converts them
// between the API's JSON values and plain Go maps, exports them from the three kinds of
// ResourceSetInputProvider (Static, OCIArtifactTag, ExternalService), combines a ResourceSet's
// inline inputs with its providers' inputs by the Flatten or Permute strategy, and digests them
// into a revision.
//
// An input is a map[string]any of JSON values (string, int64, float64, bool, nil, []any,
// map[string]any). Inputs are read-only once built: combinations share the maps of the inputs
// they were made from.
//
// Nothing here talks to the Kubernetes API; the controllers read Secrets and providers and hand
// the results in.
package inputs
