package storage

import (
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
)

// writeBenchTree writes 10,000 files of 1-4 KiB of text in 100 directories, like a large
// repository of manifests, and returns their total size.
func writeBenchTree(b *testing.B, dir string) int64 {
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 500)
	for i := range words {
		w := make([]byte, 2+rng.IntN(9))
		for j := range w {
			w[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(w)
	}
	var total int64
	var sb strings.Builder
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("dir-%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			size := 1024 + rng.IntN(3*1024+1)
			sb.Reset()
			for sb.Len() < size {
				// Indented key: value lines, mostly from a small vocabulary: compresses like YAML.
				sb.WriteString(strings.Repeat("  ", rng.IntN(4)))
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteString(": ")
				for range 1 + rng.IntN(5) {
					sb.WriteString(words[rng.IntN(len(words))])
					sb.WriteByte(' ')
				}
				sb.WriteString(fmt.Sprint(rng.IntN(100000)))
				sb.WriteByte('\n')
			}
			content := sb.String()[:size]
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file-%03d.yaml", f)), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
			total += int64(size)
		}
	}
	return total
}

func BenchmarkArchive10kFiles(b *testing.B) {
	dir := b.TempDir()
	total := writeBenchTree(b, dir)
	s := newTestStorage(b, Options{})

	archive := func(b *testing.B, filter func() func(string, os.DirEntry) bool) {
		b.SetBytes(total)
		b.ReportAllocs()
		var a meta.Artifact
		for b.Loop() {
			a = s.NewArtifactFor("GitRepository", testObject("bench"), "rev", "rev.tar.gz")
			var f func(string, os.DirEntry) bool
			if filter != nil {
				f = filter()
			}
			if err := s.Archive(&a, dir, f); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(*a.Size), "archive-bytes")
	}
	b.Run("archive", func(b *testing.B) { archive(b, nil) })
	b.Run("archive-ignorefilter", func(b *testing.B) {
		archive(b, func() func(string, os.DirEntry) bool {
			f, err := IgnoreFilter(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			return f
		})
	})
	b.Run("archive-stdlib-gzip", func(b *testing.B) {
		saved := newGzipWriter
		defer func() { newGzipWriter = saved }()
		newGzipWriter = func(w io.Writer) (io.WriteCloser, error) {
			return gzip.NewWriterLevel(w, gzip.DefaultCompression)
		}
		archive(b, nil)
	})
	b.Run("tar-czf", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "out.tar.gz")
		b.SetBytes(total)
		for b.Loop() {
			cmd := exec.Command("tar", "czf", out, "-C", dir, ".")
			if msg, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("tar czf: %v: %s", err, msg)
			}
		}
		if fi, err := os.Stat(out); err == nil {
			b.ReportMetric(float64(fi.Size()), "archive-bytes")
		}
	})
}

func BenchmarkServe100MiB20Clients(b *testing.B) {
	const size, clients = 100 << 20, 20
	s := newTestStorage(b, Options{})
	a := s.NewArtifactFor("GitRepository", testObject("big"), "rev", "big.tar.gz")
	if err := s.Copy(&a, io.LimitReader(rand.NewChaCha8([32]byte{1}), size)); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	url := srv.URL + "/" + a.Path

	b.SetBytes(size * clients)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for range clients {
			wg.Go(func() {
				resp, err := client.Get(url)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				n, err := io.Copy(io.Discard, resp.Body)
				if err == nil && n != size {
					err = fmt.Errorf("got %d bytes", n)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
}
