// Package apitest holds the tests of the source-controller's API types themselves: that they
// keep every field of Flux's source.toolkit.fluxcd.io API, so Flux users switch without editing
// YAML.
package apitest
