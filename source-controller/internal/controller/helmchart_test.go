package controller

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

func getChart(g Gomega, key client.ObjectKey) *sourcev1.HelmChart {
	obj := &sourcev1.HelmChart{}
	g.Expect(k8s.Get(context.Background(), key, obj)).To(Succeed())
	return obj
}

func createChart(t *testing.T, ns, name string, spec sourcev1.HelmChartSpec) client.ObjectKey {
	t.Helper()
	if spec.Interval.Duration == 0 {
		spec.Interval = metav1.Duration{Duration: time.Hour}
	}
	obj := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	return client.ObjectKeyFromObject(obj)
}

// chartCondition is "status|reason|message" of a HelmChart condition once the status caught up
// with the spec (or, for a failure, with the reconcile request).
func chartCondition(key client.ObjectKey, condType string) func(g Gomega) string {
	return func(g Gomega) string {
		obj := getChart(g, key)
		if obj.Annotations[meta.ReconcileRequestAnnotation] != obj.Status.LastHandledReconcileAt {
			return "not observed yet"
		}
		for _, c := range obj.Status.Conditions {
			if c.Type == condType {
				if condType == meta.ReadyCondition && c.Status == metav1.ConditionTrue && obj.Status.ObservedGeneration != obj.Generation {
					return "not observed yet"
				}
				return string(c.Status) + "|" + c.Reason + "|" + c.Message
			}
		}
		return ""
	}
}

// updateChart changes a HelmChart's spec with a merge patch, as `kubectl apply` would, without
// conflicting with the controller's own writes.
func updateChart(t *testing.T, key client.ObjectKey, change func(*sourcev1.HelmChart)) {
	t.Helper()
	g := NewWithT(t)
	obj := getChart(g, key)
	p := client.MergeFrom(obj.DeepCopy())
	change(obj)
	g.Expect(k8s.Patch(context.Background(), obj, p)).To(Succeed())
}

func setChartVersion(t *testing.T, key client.ObjectKey, version string) {
	t.Helper()
	updateChart(t, key, func(c *sourcev1.HelmChart) { c.Spec.Version = version })
}

// The walkthrough of docs/helmchart.md: the podinfo chart in range 5.* is pulled as is; 9.*
// matches nothing and stalls with Flux's message while the last artifact stays; 6.* pulls 6.0.3.
func TestHelmChartWalkthrough(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	pulled := server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "5.2.1"})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{URL: server.URL()})
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "podinfo", Version: "5.*", ReconcileStrategy: sourcev1.ReconcileStrategyChartVersion,
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
	})

	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.2.1'"))
	g.Eventually(func(g Gomega) string { return getChart(g, key).Status.ObservedChartName }, timeout).Should(Equal("podinfo"))
	obj := getChart(g, key)
	g.Expect(chartCondition(key, sourcev1.ArtifactInStorageCondition)(g)).To(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '5.2.1'"))
	g.Expect(obj.Status.Artifact.Revision).To(Equal("5.2.1"))
	g.Expect(obj.Status.Artifact.Path).To(Equal("helmchart/" + ns + "/podinfo/podinfo-5.2.1.tgz"))
	g.Expect(obj.Status.URL).To(HaveSuffix("/helmchart/" + ns + "/podinfo/latest.tar.gz"))
	g.Expect(obj.Status.ObservedChartName).To(Equal("podinfo"))
	g.Expect(obj.Status.ObservedSourceArtifactRevision).To(Equal(getHelmRepo(g, client.ObjectKey{Namespace: ns, Name: "podinfo"}).Status.Artifact.Revision))
	g.Expect(download(t, obj.Status.Artifact.URL).String()).To(Equal(sha256File(t, pulled)), "pulled as is")
	// One event for the stored chart, as Flux: its reason, not NewArtifact besides.
	g.Eventually(chartEvents(key), timeout).Should(ContainElement("Normal ChartPullSucceeded: pulled 'podinfo' chart with version '5.2.1'"))
	g.Expect(chartEvents(key)(g)).NotTo(ContainElement(HavePrefix("Normal NewArtifact")))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal ChartPullSucceeded: pulled 'podinfo' chart with version '5.2.1'"))

	setChartVersion(t, key, "9.*")
	msg := "invalid chart reference: failed to get chart version for remote reference: no 'podinfo' chart with version matching '9.*' found"
	g.Eventually(chartCondition(key, meta.StalledCondition), timeout).Should(Equal("True|InvalidChartReference|" + msg))
	g.Expect(chartCondition(key, meta.ReadyCondition)(g)).To(Equal("False|InvalidChartReference|" + msg))
	g.Expect(chartCondition(key, sourcev1.FetchFailedCondition)(g)).To(Equal("True|InvalidChartReference|" + msg))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("5.2.1"))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Warning InvalidChartReference: " + msg))

	setChartVersion(t, key, "6.*")
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	g.Expect(chartCondition(key, meta.StalledCondition)(g)).To(BeEmpty())
}

// Values files are merged and the chart repackaged, with the generation as version metadata; a
// new chart version in the repository is picked up when the index changes.
func TestHelmChartValuesFilesAndNewVersions(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewHelmRepository(t, testserver.HelmRepoOptions{})
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3",
		Files: map[string]string{"values-prod.yaml": "replicaCount: 3\n"}})
	repoKey := createHelmRepo(t, ns, "podinfo", sourcev1.HelmRepositorySpec{URL: server.URL()})
	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "podinfo", Version: "6.*", ValuesFiles: []string{"values.yaml", "values-prod.yaml"},
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
	})
	gen := strconv.FormatInt(getChart(g, key).Generation, 10)
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPackageSucceeded|packaged 'podinfo' chart with version '6.0.3+" + gen + "'"))
	g.Eventually(func(g Gomega) []string { return getChart(g, key).Status.ObservedValuesFiles }, timeout).
		Should(Equal([]string{"values.yaml", "values-prod.yaml"}))

	// A missing values file: BuildFailed, the chart stays.
	updateChart(t, key, func(c *sourcev1.HelmChart) { c.Spec.ValuesFiles = []string{"values-missing.yaml"} })
	g.Eventually(chartCondition(key, sourcev1.BuildFailedCondition), timeout).Should(And(
		HavePrefix("True|ChartPullFailed|"), ContainSubstring("values-missing.yaml")))
	g.Expect(getChart(g, key).Status.Artifact.Revision).To(Equal("6.0.3+" + gen))

	// Back to no values files; a new version appears in the index.
	updateChart(t, key, func(c *sourcev1.HelmChart) { c.Spec.ValuesFiles = nil })
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal("True|ChartPullSucceeded|pulled 'podinfo' chart with version '6.0.3'"))
	server.AddChart(t, testserver.ChartSpec{Name: "podinfo", Version: "6.1.0"})
	pokeHelmRepo(t, repoKey)
	g.Eventually(func(g Gomega) string { return getChart(g, key).Status.Artifact.Revision }, timeout).Should(Equal("6.1.0"))
}

// A chart in a GitRepository is packaged from the source's artifact, fetched through its URL;
// with the Revision strategy a new commit gives a new chart revision.
func TestHelmChartFromGitRepository(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "charts")
	dir := t.TempDir()
	testserver.WriteChartDir(t, dir, testserver.ChartSpec{Name: "podinfo", Version: "6.0.3"})
	repo.Commit(t, "Add the chart", chartFiles(t, dir, "charts/podinfo"))
	gitKey := createRepo(t, ns, "charts", sourcev1.GitRepositorySpec{URL: repo.HTTPURL()})
	g.Eventually(revision(gitKey), timeout).ShouldNot(BeEmpty())

	key := createChart(t, ns, "podinfo", sourcev1.HelmChartSpec{
		Chart: "charts/podinfo", ReconcileStrategy: sourcev1.ReconcileStrategyRevision,
		SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "charts"},
	})
	first := revision(gitKey)(g)
	g.Eventually(chartCondition(key, meta.ReadyCondition), timeout).Should(Equal(
		"True|ChartPackageSucceeded|packaged 'podinfo' chart with version '6.0.3+" + revisionMetadata(first) + "'"))

	sha := repo.Commit(t, "Tune", map[string]string{"charts/podinfo/values.yaml": "replicaCount: 2\n"})
	poke(t, gitKey)
	g.Eventually(func(g Gomega) string { return getChart(g, key).Status.Artifact.Revision }, timeout).Should(Equal("6.0.3+" + sha[:12]))
	g.Expect(getChart(g, key).Status.ObservedSourceArtifactRevision).To(Equal("master@sha1:" + sha))
}

// chartFiles reads a chart directory into files for Repo.Commit, under prefix.
func chartFiles(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	NewWithT(t).Expect(walkFiles(dir, files)).To(Succeed())
	out := make(map[string]string, len(files))
	for p, c := range files {
		out[prefix+"/"+p] = c
	}
	return out
}

// fetchChartValues downloads a chart artifact and loads it with Helm's loader: a consumer can use it.
func fetchChartValues(t *testing.T, url string) map[string]any {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get(url)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	c, err := loader.LoadArchive(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	if c.Values == nil {
		return map[string]any{}
	}
	return c.Values
}

// chartEvents are the events of a HelmChart, "<type> <reason>: <message>".
func chartEvents(key client.ObjectKey) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(k8s.List(context.Background(), list, client.InNamespace(key.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == sourcev1.HelmChartKind && e.InvolvedObject.Name == key.Name {
				out = append(out, e.Type+" "+e.Reason+": "+e.Message)
			}
		}
		return out
	}
}
