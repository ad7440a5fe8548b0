package controller

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// Regression for the class of Flux source-controller CVE-2026-47680 (upstream content written
// outside the artifact directory), for Helm chart archives: packaged charts whose entries climb
// out with '..' (at the top, where Helm's own loader drops the first component and loads
// "../x" as "x"; or behind the chart directory, with '/' or Windows '\'), are absolute, or are
// links, served by a real Helm repository (net/http over the repository's directory, listed
// in its index.yaml with their true digests) and pulled by a HelmChart. Each is refused with
// ChartPullFailed and a message that names the entry, the chart pulled before stays the
// artifact, nothing is written outside the working directory (the sentinel around TMPDIR
// stays empty) and the stored artifact has no entry outside its root. A pulled chart is stored
// byte for byte, so an archive accepted here would reach every consumer as served.
// helm/chart's FuzzLoadArchive tests the loader itself; TestHelmChartArchiveEscapingTheChart
// the 'app/../../../etc/passwd' entry.
//
// Checked against a reintroduced bug (then restored): with helm/chart's archiveEntryName
// naming entries as Helm's loader does, without its '..' and absolute path checks, and
// readArchive taking links as regular files, the top-level '../escaped-parent', the absolute
// entry and both links are pulled and stored byte for byte, and expectEntriesInside finds each
// of them in the stored chart; '../../../escaped-dotdot' and the backslash entry, still refused
// by loadFiles (Helm refuses names starting with '..'), fail on the stored chart of the case
// before them.
func TestHelmChartArchiveEntriesOutsideTheArtifact(t *testing.T) {
	g := NewWithT(t)
	sentinel := pathsSentinel(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	goodPath := server.AddChart(t, testserver.ChartSpec{Name: "app", Version: "1.0.0"})
	good, err := os.ReadFile(goodPath)
	g.Expect(err).NotTo(HaveOccurred())

	chartYAML := func(v string) tarEntry {
		return tarEntry{"app/Chart.yaml", "apiVersion: v2\nname: app\nversion: " + v + "\n", tar.TypeReg}
	}
	file := func(name string) tarEntry { return tarEntry{name, escapedMarker + name, tar.TypeReg} }
	cases := []struct {
		name    string
		entry   tarEntry
		message string
	}{
		{"top-level parent", file("../escaped-parent"),
			"chart archive entry '../escaped-parent' escapes the chart"},
		{"parent to the sentinel", file("../../../escaped-dotdot"),
			"chart archive entry '../../../escaped-dotdot' escapes the chart"},
		{"absolute", file(filepath.Join(sentinel, "escaped-abs")),
			"chart archive entry '" + filepath.Join(sentinel, "escaped-abs") + "' escapes the chart (absolute path)"},
		{"backslashes", file(`app\..\..\..\escaped-backslash`),
			`chart archive entry 'app\..\..\..\escaped-backslash' escapes the chart`},
		{"symlink out", tarEntry{"app/templates/out", sentinel, tar.TypeSymlink},
			"chart archive entry 'app/templates/out' is a link (to '" + sentinel + "'); a chart archive may only hold regular files"},
		{"hard link out", tarEntry{"app/templates/h", "../../../etc/passwd", tar.TypeLink},
			"chart archive entry 'app/templates/h' is a link (to '../../../etc/passwd'); a chart archive may only hold regular files"},
	}
	// Every version is listed from the start; each case asks for its own.
	var index strings.Builder
	index.WriteString("apiVersion: v1\nentries:\n  app:\n")
	for i, tc := range cases {
		v := fmt.Sprintf("1.0.%d", i+1)
		data := tarGzipEntries(t, []tarEntry{chartYAML(v), tc.entry})
		g.Expect(os.WriteFile(filepath.Join(server.Root(), "app-"+v+".tgz"), data, 0o644)).To(Succeed())
		fmt.Fprintf(&index, "  - {apiVersion: v2, name: app, version: %s, digest: %x, urls: [%s/app-%s.tgz]}\n", v, sha256.Sum256(data), server.URL(), v)
	}
	fmt.Fprintf(&index, "  - {apiVersion: v2, name: app, version: 1.0.0, digest: %x, urls: [%s/app-1.0.0.tgz]}\n", sha256.Sum256(good), server.URL())
	index.WriteString("generated: \"2026-01-01T00:00:00Z\"\n")
	server.WriteIndex(t, []byte(index.String()))
	// Created after the index is whole: the repository's artifact is the index it fetched
	// first, and a version missing from it would be refused as InvalidChartReference.
	createHelmRepo(t, ns, "repo", sourcev1.HelmRepositorySpec{URL: server.URL()})

	key := createChart(t, ns, "app", sourcev1.HelmChartSpec{
		Chart: "app", Version: "1.0.0", SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
	})
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'app' chart with version '1.0.0'"))
	goodArtifact := getChart(g, key).Status.Artifact
	g.Expect(download(t, goodArtifact.URL)).To(BeEquivalentTo(goodArtifact.Digest))

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			updateChart(t, key, func(c *sourcev1.HelmChart) { c.Spec.Version = fmt.Sprintf("1.0.%d", i+1) })
			var ready *metav1.Condition
			g.Eventually(func(g Gomega) bool {
				o := getChart(g, key)
				ready = conditions.Get(o, meta.ReadyCondition)
				return ready != nil && ready.ObservedGeneration == o.Generation && ready.Status != metav1.ConditionUnknown
			}, timeout).Should(BeTrue(), "the reconcile of the new version is over")
			expectNothingEscaped(t, sentinel)
			a := getChart(g, key).Status.Artifact
			expectEntriesInside(t, a.URL)
			g.Expect(string(ready.Status) + "|" + ready.Reason).To(Equal("False|" + sourcev1.ChartPullFailedReason))
			g.Expect(ready.Message).To(Equal(fmt.Sprintf("chart downloaded from %s/app-1.0.%d.tgz: %s", server.URL(), i+1, tc.message)))
			g.Expect(a.Revision).To(Equal("1.0.0"))
			g.Expect(download(t, a.URL)).To(BeEquivalentTo(goodArtifact.Digest))
		})
	}
}
