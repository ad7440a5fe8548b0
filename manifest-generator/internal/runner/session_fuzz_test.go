package runner

import (
	"bytes"
	"context"
	"encoding/gob"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
)

// The controller reads the runner's responses from a process that runs as a session's user:
// whatever bytes come back, a Session returns an error or a result within its bounds, and
// never panics or reads more than one response may take.
func FuzzSessionResponses(f *testing.F) {
	for _, r := range []response{
		{},
		{Err: "no such directory"},
		{Run: &runResponse{Stdout: []byte("kind: ConfigMap\n")}},
		{Run: &runResponse{Failed: true, ExitCode: 2, Error: "exit status 2", Stderr: "boom"}},
		{Run: &runResponse{Failed: true, TimedOut: true, Timeout: time.Second}},
		{Run: &runResponse{Failed: true, OutputLimit: 10}},
		{Changes: []Change{{Path: "app.yaml", Kind: Modified, Regular: true, Mode: 0o644, Data: []byte("v: 2\n")}}},
	} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(&r); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		const maxOutput = 1 << 10
		for _, call := range []func(*Session) (int, error){
			func(s *Session) (int, error) {
				out, err := s.Run(context.Background(), fluxyaml.Command{Command: "true"}, ".", nil)
				return len(out), err
			},
			func(s *Session) (int, error) {
				cs, err := s.Changes(context.Background())
				n := 0
				for _, c := range cs {
					n += len(c.Data) + len(c.Path)
				}
				return n, err
			},
		} {
			client, server := net.Pipe()
			go func() { _, _ = io.Copy(io.Discard, server) }()
			go func() { _, _ = server.Write(reply); _ = server.Close() }()
			s := &Session{root: t.TempDir(), opts: Options{MaxOutput: maxOutput}}
			s.attach(client)
			done := make(chan struct{})
			go func() {
				defer close(done)
				n, err := call(s)
				if err == nil && int64(n) > s.maxResponse() {
					t.Errorf("accepted %d bytes, over the bound of %d", n, s.maxResponse())
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not return")
			}
			_ = s.Close()
		}
	})
}
