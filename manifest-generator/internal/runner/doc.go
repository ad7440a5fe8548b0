// Package runner runs .flux.yaml commands outside the controller: commands come from Git, so
// they must never run with the controller's rights (its service account token, its environment,
// its checkouts and output cache).
//
// The runner is a process of its own (`manifest-generator runner`, a second container of the
// Pod in a cluster) that holds no cluster credentials and runs as another user. The controller
// reaches it over a Unix socket. Each connection is a session: the runner starts a job process
// for it, the controller uploads the tree to generate from (a checkout of an artifact, or a
// clone without its .git), and runs commands in it; the job extracts the tree into a private
// directory that no other session sees, and removes it when the session ends. The job process
// is a child subreaper: every process a command starts is killed when the command ends, those
// that left its process group included. When a session ends, the daemon kills every process of
// its user, whatever its state or parent, and removes the System V IPC objects of that user;
// only then does the user serve another session. For updates the controller asks which files
// the updaters changed and copies back only those it verified.
//
// Files: protocol.go (the messages), client.go and session.go (the controller's side), server.go
// (the daemon), job.go (a session's process), command.go (how the job runs one command: its
// environment, process group, timeout and output limits), limits.go, disk.go and openfiles.go
// (a session's limits, and the measure of its files, deleted but open ones included), ipc.go
// (the removal of a session's System V IPC objects), tree.go (upload, extraction, changes),
// local.go (a local runner process for development and tests), main.go (the subcommand).
package runner
