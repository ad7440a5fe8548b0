package proctree

import "golang.org/x/sys/unix"

// BecomeSubreaper makes the calling process the child subreaper of its subtree: orphaned
// descendants are reparented to it instead of to the init process.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
