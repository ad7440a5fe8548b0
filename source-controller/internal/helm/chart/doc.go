// Package chart builds the artifact of a HelmChart: a chart archive (.tgz) either pulled from a
// Helm HTTP repository (Pull) or packaged from a chart directory of an extracted GitRepository
// or Bucket artifact (Package), with spec.valuesFiles merged into its values.yaml and build
// metadata appended to its version, following Flux's source-controller:
//
//   - Values files replace the chart's values.yaml with their deep merge, in order, the last
//     one winning, exactly like `helm install -f a.yaml -f b.yaml` merges them. List
//     values.yaml first to keep the chart's defaults. A lone "values.yaml" is the chart as is.
//   - Version metadata replaces the SemVer build metadata of the chart version ("6.0.3" and
//     "2" give "6.0.3+2"; "6.0.3+abc" and "2" also give "6.0.3+2"), as Flux's builders do with
//     semver.SetMetadata. Joining the revision and the generation ("4e5cbb7b97d0.2") is the
//     caller's job, as in Flux's reconciler. VersionWithMetadata computes the stored version.
//   - A chart pulled without values files nor version metadata is stored byte for byte as
//     served; anything else is packaged as Helm's chartutil.Save packages it, but with fixed
//     entry times and sorted subcharts so the same inputs always give the same bytes, hence digest.
//
// Every archive and directory is read by this package's own loader, which checks entry
// paths, symlinks and the Limits per call before handing the files to Helm's loader.LoadFiles.
// Helm's loader.LoadArchive/LoadDir are not used directly: their limits are package globals
// (racy to change per call, and LoadDir only bounds file sizes), LoadArchive silently accepts
// a top-level "../x" entry (it drops the first path component, turning it into "x"), and
// LoadDir follows symlinks anywhere on the host.
//
// Errors wrap one of the sentinel errors below (several for a size limit: ErrTooLarge and the
// step it stopped), and their message says what to fix.
package chart
