// Package e2e tests the Sluice system as users run it: the controller binaries as processes, the
// kustomize deployment, the local sandbox, against the real control plane.
package e2e
