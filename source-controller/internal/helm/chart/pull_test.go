package chart_test

import (
	"archive/tar"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/sluice-gitops/sluice/shared/testserver"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
)

func TestPullAsIs(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	served := readFile(t, repo.AddChart(t, podinfo("6.0.3")))
	url := repo.URL() + "/podinfo-6.0.3.tgz"

	for _, digest := range []string{sha256Hex(served), "sha256:" + strings.ToUpper(sha256Hex(served)), ""} {
		out := t.TempDir()
		res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: url, Digest: digest}, out, chart.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(*res).To(Equal(chart.Result{Name: "podinfo", Version: "6.0.3", Path: filepath.Join(out, "podinfo-6.0.3.tgz")}))
		g.Expect(readFile(t, res.Path)).To(Equal(served), "the archive is stored byte for byte as served")
		g.Expect(dirEntries(t, out)).To(ConsistOf("podinfo-6.0.3.tgz"), "no temporary file left")
	}

	// A lone values.yaml is the chart as is, as in Flux.
	out := t.TempDir()
	res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: url}, out, chart.Options{ValuesFiles: []string{"./values.yaml"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Packaged).To(BeFalse())
	g.Expect(readFile(t, res.Path)).To(Equal(served))
}

func TestPullDigestMismatch(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, podinfo("6.0.3"))
	url := repo.URL() + "/podinfo-6.0.3.tgz"
	out := t.TempDir()

	_, err := chart.Pull(t.Context(), chart.RemoteReference{URL: url, Digest: strings.Repeat("0", 64)}, out, chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartPull))
	g.Expect(err).To(MatchError(HavePrefix("chart digest mismatch: index says sha256:" + strings.Repeat("0", 64) + ", downloaded sha256:")))
	g.Expect(dirEntries(t, out)).To(BeEmpty())

	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: url, Digest: "md5:abc"}, out, chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartPull))
	g.Expect(err).To(MatchError(ContainSubstring("is not a SHA-256 hex digest")))
}

func TestPullHTTPErrors(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})

	_, err := chart.Pull(t.Context(), chart.RemoteReference{URL: repo.URL() + "/missing-1.0.0.tgz"}, t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartPull))
	g.Expect(err).To(MatchError(ContainSubstring("404 Not Found")))

	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: "oci://ghcr.io/x/y"}, t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartPull))

	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: serve(t, repo, "garbage-1.0.0.tgz", []byte("not a chart"))}, t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartLoad))
	g.Expect(err).To(MatchError(ContainSubstring("not a gzipped chart archive")))
}

func TestPullBasicAuth(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{Username: "flux", Password: "s3cret"})
	repo.AddChart(t, podinfo("6.0.3"))
	url := repo.URL() + "/podinfo-6.0.3.tgz"

	res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: url, Username: "flux", Password: "s3cret"}, t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Name).To(Equal("podinfo"))

	for _, ref := range []chart.RemoteReference{{URL: url}, {URL: url, Username: "flux", Password: "wrong"}} {
		_, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{})
		g.Expect(err).To(MatchError(chart.ErrChartPull))
		g.Expect(err).To(MatchError(ContainSubstring("401 Unauthorized; check the credentials")))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))
	}
}

func TestPullTLS(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{TLS: true})
	served := readFile(t, repo.AddChart(t, podinfo("6.0.3")))
	url := repo.URL() + "/podinfo-6.0.3.tgz"
	g.Expect(url).To(HavePrefix("https://"))

	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(repo.CAPEM())).To(BeTrue())
	res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: url, Digest: sha256Hex(served), TLS: &tls.Config{RootCAs: pool}}, t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readFile(t, res.Path)).To(Equal(served))

	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: url}, t.TempDir(), chart.Options{})
	g.Expect(err).To(MatchError(chart.ErrChartPull))
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))
}

func TestPullValuesFilesMerged(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, podinfo("6.0.3"))
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}
	out := t.TempDir()

	files := []string{"values.yaml", "values-prod.yaml", "./values-eu.yaml"}
	res, err := chart.Pull(t.Context(), ref, out, chart.Options{ValuesFiles: files, VersionMetadata: "2"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*res).To(Equal(chart.Result{
		Name: "podinfo", Version: "6.0.3+2", Packaged: true, ValuesFiles: files,
		Path: filepath.Join(out, "podinfo-6.0.3+2.tgz"),
	}))
	c := loadChart(t, res.Path)
	g.Expect(c.Metadata.Version).To(Equal("6.0.3+2"))
	g.Expect(c.Values).To(Equal(map[string]any{
		"replicaCount": float64(3),
		"image":        map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.0.4", "pullPolicy": "IfNotPresent"},
		"ingress":      map[string]any{"enabled": false, "hosts": []any{"b.example", "c.example"}},
		"region":       "eu",
	}))
	// The rest of the chart is untouched.
	g.Expect(c.Templates).To(HaveLen(1))
	var names []string
	for _, f := range c.Files {
		names = append(names, f.Name)
	}
	g.Expect(names).To(ContainElements("values-prod.yaml", "values-eu.yaml"))
	g.Expect(dirEntries(t, out)).To(ConsistOf("podinfo-6.0.3+2.tgz"))

	// Values files replace values.yaml: without it, the chart's defaults are gone (Flux).
	res, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{ValuesFiles: []string{"values-eu.yaml"}, VersionMetadata: "3"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loadChart(t, res.Path).Values).To(Equal(map[string]any{
		"image":  map[string]any{"pullPolicy": "IfNotPresent"},
		"region": "eu",
	}))
}

func TestPullVersionMetadata(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, podinfo("6.0.3"))
	repo.AddChart(t, podinfo("7.0.0+build.1"))

	// Metadata alone repackages the chart with its own values.
	res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}, t.TempDir(), chart.Options{VersionMetadata: "4e5cbb7b97d0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("6.0.3+4e5cbb7b97d0"))
	g.Expect(res.Packaged).To(BeTrue())
	g.Expect(res.ValuesFiles).To(BeEmpty())
	c := loadChart(t, res.Path)
	g.Expect(c.Metadata.Version).To(Equal("6.0.3+4e5cbb7b97d0"))
	g.Expect(c.Values).To(HaveKeyWithValue("replicaCount", float64(1)))

	// Existing build metadata is replaced, as Flux's semver.SetMetadata does.
	res, err = chart.Pull(t.Context(), chart.RemoteReference{URL: repo.URL() + "/podinfo-7.0.0+build.1.tgz"}, t.TempDir(), chart.Options{VersionMetadata: "2"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Version).To(Equal("7.0.0+2"))
	g.Expect(filepath.Base(res.Path)).To(Equal("podinfo-7.0.0+2.tgz"))

	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}, t.TempDir(), chart.Options{VersionMetadata: "not_valid!"})
	g.Expect(err).To(MatchError(ContainSubstring("invalid version metadata 'not_valid!'")))
}

func TestVersionWithMetadata(t *testing.T) {
	for _, tt := range []struct{ version, metadata, want string }{
		{"6.0.3", "2", "6.0.3+2"},
		{"6.0.3", "", "6.0.3"},
		{"v6.0.3+abc", "", "v6.0.3+abc"},
		{"6.0.3+abc", "2", "6.0.3+2"},
		{"6.0.3-rc.1", "4e5cbb7b97d0.2", "6.0.3-rc.1+4e5cbb7b97d0.2"},
		{"v6.0", "2", "6.0.0+2"},
	} {
		got, err := chart.VersionWithMetadata(tt.version, tt.metadata)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(got).To(Equal(tt.want), "%s + %s", tt.version, tt.metadata)
	}
	_, err := chart.VersionWithMetadata("latest", "2")
	NewWithT(t).Expect(err).To(MatchError(chart.ErrChartLoad))
	_, err = chart.VersionWithMetadata("1.0.0", "a+b")
	NewWithT(t).Expect(err).To(HaveOccurred())
}

func TestPullMissingValuesFile(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, podinfo("6.0.3"))
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}

	out := t.TempDir()
	_, err := chart.Pull(t.Context(), ref, out, chart.Options{ValuesFiles: []string{"values.yaml", "values-staging.yaml"}, VersionMetadata: "1"})
	g.Expect(err).To(MatchError(chart.ErrValuesFile))
	g.Expect(err).To(MatchError("values file 'values-staging.yaml' not found in chart 'podinfo'"))
	g.Expect(dirEntries(t, out)).To(BeEmpty())

	res, err := chart.Pull(t.Context(), ref, out, chart.Options{ValuesFiles: []string{"values-staging.yaml", "values-eu.yaml"}, IgnoreMissingValuesFiles: true, VersionMetadata: "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ValuesFiles).To(Equal([]string{"values-eu.yaml"}))
	g.Expect(loadChart(t, res.Path).Values).To(HaveKeyWithValue("region", "eu"))

	// Nothing to merge: the chart's own values stay (Flux would write an empty values.yaml).
	res, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{ValuesFiles: []string{"values-staging.yaml"}, IgnoreMissingValuesFiles: true, VersionMetadata: "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ValuesFiles).To(BeEmpty())
	g.Expect(loadChart(t, res.Path).Values).To(HaveKeyWithValue("replicaCount", float64(1)))

	_, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{ValuesFiles: []string{"values-bad.yaml"}, VersionMetadata: "1"})
	g.Expect(err).To(MatchError(chart.ErrValuesFile))
	g.Expect(err).To(MatchError(ContainSubstring("values file 'values-bad.yaml' is not a YAML map")))

	_, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{ValuesFiles: []string{"../values.yaml"}, VersionMetadata: "1"})
	g.Expect(err).To(MatchError(chart.ErrValuesFile))
}

func TestPullTooLarge(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	spec := podinfo("6.0.3")
	// Random hex compresses to about half: 8 KiB of it is a ~4 KiB download.
	spec.Files["files/big.txt"] = randomString(t, 8<<10)
	repo.AddChart(t, spec)
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}

	_, err := chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{Limits: chart.Limits{MaxChartSize: 2048}})
	g.Expect(err).To(MatchError(chart.ErrTooLarge))
	g.Expect(err).To(MatchError(chart.ErrChartPull))
	g.Expect(err).To(MatchError(ContainSubstring("is larger than --helm-chart-max-size (2048 bytes)")))

	_, err = chart.Pull(t.Context(), ref, t.TempDir(), chart.Options{Limits: chart.Limits{MaxFileSize: 4096}})
	g.Expect(err).To(MatchError(chart.ErrTooLarge))
	g.Expect(err).To(MatchError(chart.ErrChartLoad))
	g.Expect(err).To(MatchError(ContainSubstring("chart file 'files/big.txt' is 8192 bytes, larger than --helm-chart-file-max-size (4096 bytes)")))

	// Without Content-Length (chunked), the limit applies to what is read.
	archive := readFile(t, filepath.Join(repo.Root(), "podinfo-6.0.3.tgz"))
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for chunk := range slicesChunk(archive, 512) {
			_, _ = w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(chunked.Close)
	_, err = chart.Pull(t.Context(), chart.RemoteReference{URL: chunked.URL + "/podinfo.tgz"}, t.TempDir(), chart.Options{Limits: chart.Limits{MaxChartSize: 2048}})
	g.Expect(err).To(MatchError(chart.ErrTooLarge))
	res, err := chart.Pull(t.Context(), chart.RemoteReference{URL: chunked.URL + "/podinfo.tgz", Digest: sha256Hex(archive)}, t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readFile(t, res.Path)).To(Equal(archive))
}

func slicesChunk(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			m := min(n, len(b))
			if !yield(b[:m]) {
				return
			}
			b = b[m:]
		}
	}
}

func TestPullRefusesEntriesOutsideTheChart(t *testing.T) {
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	sub := craftArchive(t,
		tarEntry{name: "sub/Chart.yaml", body: "apiVersion: v2\nname: sub\nversion: 1.0.0\n"},
		tarEntry{name: "sub/../../x", body: "x"},
	)
	for i, tt := range []struct {
		name  string
		entry tarEntry
		want  string
	}{
		{"top-level parent", tarEntry{name: "../x", body: "x"}, "chart archive entry '../x' escapes the chart"},
		{"parent inside", tarEntry{name: "evil/../../x", body: "x"}, "chart archive entry 'evil/../../x' escapes the chart"},
		{"deep parent", tarEntry{name: "evil/templates/../../../etc/x", body: "x"}, "chart archive entry 'evil/templates/../../../etc/x' escapes the chart"},
		{"windows parent", tarEntry{name: `evil\..\..\x`, body: "x"}, `chart archive entry 'evil\..\..\x' escapes the chart`},
		{"absolute", tarEntry{name: "/etc/passwd", body: "x"}, "chart archive entry '/etc/passwd' escapes the chart (absolute path)"},
		{"drive", tarEntry{name: "c:/x", body: "x"}, "chart archive entry 'c:/x' escapes the chart (absolute path)"},
		{"top-level file", tarEntry{name: "Chart.yaml", body: "x"}, "chart archive entry 'Chart.yaml' is not inside the chart's directory"},
		{"symlink", tarEntry{name: "evil/templates/cm.yaml", link: "/etc/passwd", typ: tar.TypeSymlink}, "chart archive entry 'evil/templates/cm.yaml' is a link (to '/etc/passwd')"},
		{"hard link", tarEntry{name: "evil/templates/cm.yaml", link: "evil/values.yaml", typ: tar.TypeLink}, "is a link"},
		{"fifo", tarEntry{name: "evil/fifo", typ: tar.TypeFifo}, "is not a regular file"},
		{"dot-dot name", tarEntry{name: "evil/..data", body: "x"}, "chart file '..data': Helm refuses to load"},
		{"nested archive", tarEntry{name: "evil/charts/sub-1.0.0.tgz", body: string(sub)}, "subchart archive 'charts/sub-1.0.0.tgz' of chart 'evil': chart archive entry 'sub/../../x' escapes the chart"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := craftArchive(t, append(validEntries(), tt.entry)...)
			if i == 0 {
				// Why the package reads archives itself: Helm drops the first component of
				// every entry, so "../x" loads as a file "x" of the chart.
				c, err := loader.LoadArchive(bytes.NewReader(data))
				if err == nil {
					for _, f := range c.Files {
						t.Logf("helm's loader.LoadArchive accepts entry %q as chart file %q", tt.entry.name, f.Name)
					}
				} else {
					t.Logf("helm's loader.LoadArchive refuses entry %q: %v", tt.entry.name, err)
				}
			}
			out := t.TempDir()
			_, err := chart.Pull(t.Context(), chart.RemoteReference{URL: serve(t, repo, "evil.tgz", data)}, out, chart.Options{})
			g.Expect(err).To(MatchError(chart.ErrChartLoad))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(dirEntries(t, out)).To(BeEmpty())
		})
	}

	// A well-formed archive crafted the same way loads: the checks are not over-eager.
	g := NewWithT(t)
	_, err := chart.Pull(t.Context(), chart.RemoteReference{URL: serve(t, repo, "ok.tgz", craftArchive(t, append(validEntries(),
		tarEntry{name: "evil/", typ: tar.TypeDir}, tarEntry{name: "evil/a..b", body: "dots are fine"}, tarEntry{name: "evil/templates/..b", body: "nested dots are fine"})...))}, t.TempDir(), chart.Options{})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestPullReproducible(t *testing.T) {
	g := NewWithT(t)
	repo := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	repo.AddChart(t, podinfo("6.0.3"))
	ref := chart.RemoteReference{URL: repo.URL() + "/podinfo-6.0.3.tgz"}
	opts := chart.Options{ValuesFiles: []string{"values.yaml", "values-prod.yaml"}, VersionMetadata: "1"}

	first, err := chart.Pull(t.Context(), ref, t.TempDir(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	// chartutil.Save stamps entries with time.Now, at one-second resolution: cross a second.
	time.Sleep(1100 * time.Millisecond)
	second, err := chart.Pull(t.Context(), ref, t.TempDir(), opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readFile(t, second.Path)).To(Equal(readFile(t, first.Path)))
}
