// Package stresstest holds the stress tests of the receivers' shared caches (the Secrets' known
// tokens, the callers the API server accepted, the replay memory and the rate buckets), run
// under the race detector by `make test-race`. They are a package of their own, with no API
// server, so that the race build stays small.
package stresstest
