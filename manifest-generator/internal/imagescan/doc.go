// Package imagescan reads image registries for automated image releases: a
// workload annotated fluxcd.io/automated: "true" follows the newest tag of
// its image repository that passes its filter fluxcd.io/tag.<container>.
//
// ParseFilter reads Flux v1's filters (glob, semver, regex). A Scanner,
// one per controller, answers Tags, Created and Newest for every workload.
//
// # Caching
//
// A controller asks about the same repositories for many workloads, again
// at every reconcile, and registries rate-limit (Docker Hub counts every
// request). So the requests follow the repositories, not the workloads:
//
//   - A repository's tag list is fetched at most once per Interval (for the
//     same credentials); concurrent callers share the request in flight.
//     This is the only request of the steady state: per Interval, one tag
//     list per repository, however many workloads follow it.
//   - Semver filters are decided from the tag list alone.
//   - Glob and regex filters pick the most recently created image, which
//     needs each matching tag's config. Creation times are cached by digest
//     for good (a digest names its content). A tag's digest is trusted for
//     DigestRefresh (default a day, never less than Interval), since
//     checking every tag each Interval would cost a request per tag; a tag
//     moved to another image is seen within that time, a new tag at the next
//     list. A new tag costs its manifest and config once; a known tag past
//     DigestRefresh costs one HEAD.
//   - The caches are keyed by a digest of the credentials used, so that a
//     workload without access to a private repository is never answered
//     from what a workload with access was shown.
//
// Requests of all registries together are bounded by MaxConcurrent. An
// answer HTTP 429 is retried after the wait its Retry-After asks for, or an
// exponential backoff, a bounded number of times; then the error is a
// RateLimitedError. go-containerregistry's remote package does the rest:
// sessions (ping, tokens) are kept per credentials and transport in its
// Puller, and other transient errors are retried by its own retries.
//
// # Addresses and errors
//
// Images are named by tenants, so a registry may be anywhere. Every
// connection, redirects and token services included, goes through the
// Config's AddressPolicy, checked on the address dialed: loopback,
// link-local and unspecified addresses and the cluster's Service ranges are
// refused unless allowed (--external-service-allowed-cidrs). A registry may
// also answer anything, so its answers are never repeated in errors: an
// error answer is a RegistryError (status and OCI error codes), any other
// error keeps its first line, bounded.
package imagescan
