// Package storage is the artifact storage of the source-controller: it writes reproducible
// tarballs of reconciled sources under --storage-path, verifies and garbage-collects them, and
// serves them over HTTP at the URLs recorded in status.artifact, following the contract of
// Flux's source-controller so that Flux consumers and github.com/sluice-gitops/sluice/shared/artifact
// can download, verify and extract them.
package storage
