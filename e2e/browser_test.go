package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium for the test. Chromium is a test dependency like git: a
// machine without it fails the test with the way to install it, it does not skip.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found on PATH: install it (apt-get install chromium; .ci/run does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(1600, 1000),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(ctx)
	t.Cleanup(cancelBrowser)
	return ctx
}

// screenshot keeps the whole page as a test artifact, in $SLUICE_TEST_ARTIFACTS (or
// sluice-test-artifacts in the temporary directory).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("SLUICE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sluice-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the page: %s", path)
}

// startGateUI runs `kubectl gate ui` with kubeconfig as a user does and returns the URL it
// prints; it is stopped with Ctrl-C at the end of the test.
func startGateUI(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "kubectl-gate"), append([]string{"ui", "--address", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl gate ui printed no URL: %v\n%s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if url == "" {
		t.Fatalf("no URL in %q", line)
	}
	return url
}
