// Package index turns a Helm repository's index.yaml into a compact, seekable file and resolves
// chart versions from it.
//
// Flux's source-controller keeps the whole index of a HelmRepository in memory for every
// HelmChart it reconciles: an index of tens of MiB decodes into hundreds of MiB of maps and
// strings, and a few concurrent reconciles of big repositories are enough to get the controller
// OOM-killed. Sluice instead stores, as the HelmRepository's artifact, a compact index that
// Convert writes once per index revision:
//
//   - Convert reads index.yaml (or its JSON form) as a stream, one chart's entries at a time,
//     so its memory is bounded by the largest single chart's entry list, and keeps per version
//     only what resolution and download need (see format.go for the layout).
//   - Resolve seeks straight to one chart's section through the offset table at the end of the
//     file and picks the version there, so a HelmChart reconcile reads a few KiB instead of
//     decoding the whole index.
//
// Resolution follows helm.sh/helm/v4/pkg/repo/v1.IndexFile.Get, the function Helm itself and
// Flux use, including its entry validation at load time and its ordering of versions of equal
// precedence; the tests check this against Helm on the same indexes.
package index
