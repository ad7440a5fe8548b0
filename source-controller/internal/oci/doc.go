// Package oci verifies the cosign signatures of OCI artifacts (charts in OCI registries and
// OCIRepository artifacts) with the public keys a user trusts.
package oci
