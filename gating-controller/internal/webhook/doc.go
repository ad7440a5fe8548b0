// Package webhook holds the hardening that the gating-controller's two internet-facing receivers
// share: the gate receiver (internal/gatereceiver, docs/receiver.md) and Flux's Receiver
// (internal/fluxreceiver, docs/flux-receiver.md). The server's timeouts, constant-time token and
// HMAC checks, per-object rate limits, the failed-attempt budget of each source address, the
// replay memory and the JSON answers are here; what a request means is each receiver's own.
package webhook
