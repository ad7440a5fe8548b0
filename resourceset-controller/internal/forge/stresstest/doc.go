// Package stresstest holds the stress test of the forge's GitHub App token cache, shared by
// every tenant's providers, that `make test-race` runs under the race detector. It lives apart
// from the forge's own tests, whose real servers would make the race build slower.
package stresstest
