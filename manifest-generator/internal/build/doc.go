// Package build is what a ManifestGeneration reconcile does between "the source has an
// artifact" and "here are the objects to apply": it fetches the artifact once per digest into a
// shared, read-only checkout, finds the .flux.yaml that governs the target path, runs its
// generators (or reads the raw YAML files), applies the patch file of a patchUpdated
// configuration, and caches the result, so that a sync of an unchanged revision runs no command.
//
// The pieces it puts together are shared/artifact (download, digest check, safe extraction),
// internal/fluxyaml (lookup, parsing, commands, decoding) and internal/patch (the patch file).
package build
