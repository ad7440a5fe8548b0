// Package harness runs the Sluice system for end-to-end tests and the local sandbox: the real
// control plane (shared/testenv) and the controller binaries of bin/ as processes with their real
// flags, logs and health ports.
package harness
