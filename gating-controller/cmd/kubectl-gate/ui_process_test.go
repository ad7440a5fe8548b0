package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startUI runs `kubectl gate ui` as a user does and returns the URL it prints. At the end of the
// test it is stopped with Ctrl-C (SIGINT), and must exit cleanly.
func startUI(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := pluginCmd(ctx, append([]string{"ui", "--address", "127.0.0.1:0"}, args...)...)
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
		defer cancel()
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("kubectl gate ui did not stop cleanly on Ctrl-C: %v\nstderr:\n%s", err, stderr.String())
		}
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl gate ui printed no URL: %v\nstderr:\n%s", err, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	t.Logf("kubectl gate ui %v: %s", args, strings.TrimSpace(line))
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if url == "" {
		t.Fatalf("no URL in %q", line)
	}
	return url
}
