// Package stresstest holds the stress tests of imagescan's shared caches that `make test-race`
// runs under the race detector. They live apart from imagescan's own tests, whose real servers
// (shared/testserver) would make the race build of the package far slower.
package stresstest
