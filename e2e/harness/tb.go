package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// MainTB is a testing.TB for TestMain, where no *testing.T exists yet: it lets package-wide
// servers (shared/testserver's Git server, Helm repository and OCI registry take a testing.TB)
// be started once for every test of a package. Cleanups run, last registered first, when
// Close is called; logs go to Out (os.Stderr when nil); a fatal error panics with its
// message, since TestMain has no test to fail. Only the methods the test servers use are
// meaningful: Skip*, Setenv, Chdir and Attr panic.
type MainTB struct {
	// testing.TB is embedded (nil) for its unexported method, so MainTB satisfies the
	// interface; every method the servers call is overridden below.
	testing.TB

	// Out is where Log and Logf write; os.Stderr when nil.
	Out io.Writer

	mu       sync.Mutex
	cleanups []func()
	dirs     []string
	failed   bool
	ctx      context.Context
	cancel   context.CancelFunc
}

// NewMainTB returns a MainTB whose logs go to out (os.Stderr when nil).
func NewMainTB(out io.Writer) *MainTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &MainTB{Out: out, ctx: ctx, cancel: cancel}
}

// Close runs the cleanups, last registered first, and removes the temporary directories.
func (m *MainTB) Close() {
	m.mu.Lock()
	cleanups := m.cleanups
	m.cleanups = nil
	dirs := m.dirs
	m.dirs = nil
	m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
	}
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

func (m *MainTB) Cleanup(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleanups = append(m.cleanups, f)
}

func (m *MainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	if err != nil {
		m.Fatalf("TempDir: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs = append(m.dirs, dir)
	return dir
}

func (m *MainTB) Helper()       {}
func (m *MainTB) Name() string  { return "TestMain" }
func (m *MainTB) Skipped() bool { return false }

func (m *MainTB) Output() io.Writer {
	if m.Out == nil {
		return os.Stderr
	}
	return m.Out
}

func (m *MainTB) Context() context.Context {
	if m.ctx == nil {
		return context.Background()
	}
	return m.ctx
}

func (m *MainTB) ArtifactDir() string { return m.TempDir() }

func (m *MainTB) Log(args ...any) { fmt.Fprintln(m.Output(), args...) }
func (m *MainTB) Logf(format string, args ...any) {
	fmt.Fprintf(m.Output(), format+"\n", args...)
}

func (m *MainTB) Error(args ...any) {
	m.Log(args...)
	m.Fail()
}

func (m *MainTB) Errorf(format string, args ...any) {
	m.Logf(format, args...)
	m.Fail()
}

func (m *MainTB) Fail() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed = true
}

func (m *MainTB) Failed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

// FailNow panics: TestMain has no test goroutine to stop.
func (m *MainTB) FailNow() {
	m.Fail()
	_, file, line, _ := runtime.Caller(1)
	panic(fmt.Sprintf("harness.MainTB: fatal error (called from %s:%d)", file, line))
}

func (m *MainTB) Fatal(args ...any) {
	m.Fail()
	panic(fmt.Sprint(args...))
}

func (m *MainTB) Fatalf(format string, args ...any) {
	m.Fail()
	panic(fmt.Sprintf(format, args...))
}
