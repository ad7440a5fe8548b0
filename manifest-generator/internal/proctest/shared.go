package proctest

import (
	"os"
	"testing"
)

// SharedDir is a new directory that commands run by the runner may write to, for tests that
// let a command report (a pid, a counter): the runner runs as another user when the tests run
// as root. It is removed when the test ends.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shared-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
