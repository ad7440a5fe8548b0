// Package cosign verifies the cosign signatures of OCI artifacts with the public keys a user
// trusts. It serves the source-controller (charts in OCI registries and OCIRepository
// artifacts, for spec.verify of OCIRepository and HelmChart) and the manifest-generator's
// automation (an image is released only once its signature verifies).
package cosign
