// Package proctree kills whole process trees on Linux: a process that is a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER) inherits every orphan of its subtree, so a command's children
// that left its process group (setsid) or were double-forked still have it as an ancestor and
// can be found through /proc and killed. The runner's job processes use it so that nothing a
// .flux.yaml command starts outlives the command, and the runner kills every process of a
// session's user (KillUser) before it hands that user to another session.
//
// A process is alive as long as one of its threads runs: one whose main thread ended
// (pthread_exit) shows as a zombie in /proc/<pid>/stat while its other threads go on, and is
// killed like any other.
package proctree
