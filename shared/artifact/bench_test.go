package artifact

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// A source artifact of a mid-size repository: 2,000 files of 4 KiB in 40 directories, links included.
func benchArchive(b *testing.B) []byte {
	var entries []entry
	body := strings.Repeat("apiVersion: v1\nkind: ConfigMap\n", 128)
	for i := range 2000 {
		entries = append(entries, file(fmt.Sprintf("apps/d%02d/f%04d.yaml", i%40, i), body))
	}
	entries = append(entries, symlink("apps/latest", "d00"), hardlink("apps/copy.yaml", "apps/d00/f0000.yaml"))
	return buildTarGz(b, entries...)
}

func BenchmarkExtract(b *testing.B) {
	data := benchArchive(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Extract(bytes.NewReader(data), b.TempDir(), Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDownloadVerify(b *testing.B) {
	data := benchArchive(b)
	url := serve(b, data, nil).url()
	f := &Fetcher{}
	want := digest.SHA256.FromBytes(data).String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var sink bytes.Buffer
		if err := f.Download(b.Context(), url, want, &sink); err != nil {
			b.Fatal(err)
		}
	}
}
