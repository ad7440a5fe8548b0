package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer collects what a controller under test logs (give it to zap.WriteTo), so a test can
// assert the log lines a user would read.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Lines returns the lines logged so far.
func (b *LogBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(b.buf.String(), "\n")
}
