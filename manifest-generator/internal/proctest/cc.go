package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CompileC compiles the C program source (with -pthread) into an executable named name, in a
// new directory that every user may enter and read (the runner's sessions run as other users),
// removed when the test ends. It returns the executable's path. Without gcc the test fails or,
// outside CI, is skipped, naming the package to install.
func CompileC(t testing.TB, name, source string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gcc is needed to build the test's helper program (apt-get install gcc)")
		}
		t.Skip("gcc is needed to build the test's helper program: apt-get install gcc")
	}
	dir, err := os.MkdirTemp("", "cc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, name+".c")
	if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(gcc, "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", name, err, out)
	}
	return bin
}
