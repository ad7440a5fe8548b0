// Package sizelimit words the refusals of the source-controller's size limits
// (--artifact-max-size, --git-max-clone-size, --oci-max-layer-size) one way: what is too large,
// its size, the flag and the limit, e.g. "Git clone is 312 MiB, over --git-max-clone-size
// (256 MiB)".
package sizelimit
