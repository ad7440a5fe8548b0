// Package artifact is the consumer side of the artifact contract of the source-controller: read
// `status.artifact` from any source object, download the artifact URL, verify it against its
// digest and extract the tarball safely.
package artifact
