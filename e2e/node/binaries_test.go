package node

import (
	"os"
	"strings"
	"testing"
)

// TestMissingBinary: without the node's binaries Start fails, naming the make target, before it
// changes anything on the host.
func TestMissingBinary(t *testing.T) {
	// A node running on this host (make cluster) has the directory already: then only the error
	// can be checked.
	_, statErr := os.Stat(runDir)
	running := statErr == nil
	_, err := Start(t.Context(), Options{BinDir: t.TempDir(), StateDir: t.TempDir(), Kubeconfig: "unused"})
	if err == nil || !strings.Contains(err.Error(), "make node-tools") {
		t.Fatalf("Start with an empty bin directory: got %v, want an error naming `make node-tools`", err)
	}
	if _, err := os.Stat(runDir); err == nil && !running {
		t.Fatalf("%s exists after a Start that failed its checks", runDir)
	}
}
