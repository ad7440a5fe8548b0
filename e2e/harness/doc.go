// Package harness runs the Sluice system for end-to-end tests and the local sandbox: the real
// control plane (shared/testenv) with a kube-controller-manager running its namespace and
// garbage-collector controllers (StartControllerManager), the controller binaries of bin/ as
// processes with their real flags, logs and health ports (StartController, StartSystem), and the
// real upstreams they are tested against (StartServers: Git, Helm repository, OCI registry from
// shared/testserver).
//
// A Controller can be stopped gracefully (Stop), killed with SIGKILL (Kill) and started again
// with the same command line (Restart), to test recovery; LogTail and System.LogTails give what
// a failed test prints. Faults of the rest of the system: System.StopAPIServer and
// StartAPIServer stop the kube-apiserver and start it again on the same etcd, port and
// certificates; a Proxy in front of an upstream takes it away from the clients that reach it
// through the proxy (Down) and gives it back on the same address (Up). MainTB lets TestMain
// start package-wide servers, which take a testing.TB.
package harness
