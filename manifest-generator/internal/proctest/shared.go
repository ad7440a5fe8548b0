package proctest

import (
	"os"
	"strings"
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

// Runs counts the runs a command recorded in dir (a SharedDir) with
// `mktemp "$COUNTER_DIR/run.XXXXXX"`: one file per run, since the sessions of the runner run as
// different users, and one could not append to a file another one created.
func Runs(t testing.TB, dir string) int {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "run.") {
			n++
		}
	}
	return n
}
