package scenarios

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

const consumerSources = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: app
spec:
  interval: 1m
  url: __GIT__
  secretRef:
    name: git-credentials
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
spec:
  interval: 1m
  url: __HELM__
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: app
spec:
  interval: 1m
  chart: consumer-app
  version: '1.x'
  sourceRef:
    kind: HelmRepository
    name: charts
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: manifests
spec:
  interval: 1m
  url: oci://__REGISTRY__/consumer/manifests
  insecure: true
  ref:
    tag: v1
`

// The consumer contract: what another process (Flux's kustomize-controller and
// helm-controller, a script) sees of the source-controller's artifacts. Each artifact is
// downloaded by URL with curl, and its bytes match status.artifact.digest and size.
func TestScenarioConsumerContract(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "consumer")
	g := s.g
	curl, err := exec.LookPath("curl")
	g.Expect(err).NotTo(HaveOccurred(), "curl downloads the artifacts as another process would: install curl")

	s.gitSecret(s.ns, "git-credentials")
	repo, sha := s.newRepo("consumer-app", map[string]string{
		"deploy/app.yaml":   configMapYAML("app", "v1"),
		".flux.yaml":        "version: 1\nscanForFiles: {}\n",
		".github/ci.yml":    "on: push\n",
		"docs/README.md":    "# app\n",
		"deploy/.gitignore": "*.tmp\n",
	})
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "consumer-app", Version: "1.0.0", Values: map[string]any{"greeting": "hello"}})
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "consumer-app", Version: "1.2.0", Values: map[string]any{"greeting": "hello"}})
	servers.Helm.AddChart(t, testserver.ChartSpec{Name: "consumer-app", Version: "2.0.0"})
	annotations := map[string]string{
		"org.opencontainers.image.source":   repo.HTTPURL(),
		"org.opencontainers.image.revision": "master@sha1:" + sha,
	}
	manifestDigest := servers.Registry.PushArtifact(t, "consumer/manifests:v1", map[string]string{"app.yaml": configMapYAML("app", "v1")}, annotations)
	s.create(consumerSources, "__GIT__", repo.HTTPURL(), "__HELM__", servers.Helm.URL(), "__REGISTRY__", servers.Registry.Host())

	for _, src := range []struct {
		gvk      schema.GroupVersionKind
		name     string
		revision types.GomegaMatcher
	}{
		{gitRepositoryGVK, "app", Equal("master@sha1:" + sha)},
		{helmRepositoryGVK, "charts", HavePrefix("sha256:")},
		{helmChartGVK, "app", Equal("1.2.0")},
		{ociRepositoryGVK, "manifests", Equal("v1@" + manifestDigest)},
	} {
		settled(g, src.gvk, s.ns, src.name, HavePrefix("True|"), func(g Gomega, obj *unstructured.Unstructured) {
			g.Expect(str(obj, "status", "artifact", "revision")).To(src.revision)
		})
	}
	storage := "http://" + sys.Controller("source-controller").StorageAddr + "/"

	// GitRepository: the tree of the commit, without VCS or CI files, .flux.yaml kept.
	git := mustObject(g, gitRepositoryGVK, s.ns, "app")
	art := checkArtifact(s, curl, storage, git, "gitrepository/consumer/app/"+sha+".tar.gz", "master@sha1:"+sha)
	g.Expect(tarFiles(g, art)).To(Equal([]string{".flux.yaml", "deploy/app.yaml", "docs/README.md"}))
	latest := curlGet(s, curl, strings.TrimSuffix(str(git, "status", "artifact", "url"), sha+".tar.gz")+"latest.tar.gz")
	g.Expect(latest.Digest).To(Equal(str(git, "status", "artifact", "digest")), "latest.tar.gz is the current artifact")

	// HelmChart: the newest chart in range, as the repository served it, loadable by Helm.
	chart := mustObject(g, helmChartGVK, s.ns, "app")
	g.Expect(condition(chart, "Ready")).To(Equal("True|ChartPullSucceeded|pulled 'consumer-app' chart with version '1.2.0'"))
	art = checkArtifact(s, curl, storage, chart, "helmchart/consumer/app/consumer-app-1.2.0.tgz", "1.2.0")
	served, err := os.ReadFile(filepath.Join(servers.Helm.Root(), "consumer-app-1.2.0.tgz"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(art).To(Equal(served), "the chart is stored as the repository served it")
	g.Expect(tarFile(g, art, "consumer-app/Chart.yaml")).To(ContainSubstring("version: 1.2.0"))
	g.Expect(str(chart, "status", "url")).To(Equal(strings.TrimSuffix(str(chart, "status", "artifact", "url"), "consumer-app-1.2.0.tgz") + "latest.tar.gz"))
	g.Expect(curlGet(s, curl, str(chart, "status", "url")).Digest).To(Equal(str(chart, "status", "artifact", "digest")))
	g.Expect(str(chart, "status", "observedChartName")).To(Equal("consumer-app"))
	helmRepo := mustObject(g, helmRepositoryGVK, s.ns, "charts")
	g.Expect(str(chart, "status", "observedSourceArtifactRevision")).To(Equal(str(helmRepo, "status", "artifact", "revision")))

	// HelmRepository: the digest of the index downloaded as revision, the download's
	// validators as metadata (the test server's ETag is the SHA-256 of the file it served;
	// the index itself may have changed since, other scenarios add charts).
	revision := str(helmRepo, "status", "artifact", "revision")
	g.Expect(revision).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	checkArtifact(s, curl, storage, helmRepo, "", revision)
	g.Expect(str(helmRepo, "status", "artifact", "metadata", "etag")).To(Equal(`"` + strings.TrimPrefix(revision, "sha256:") + `"`))
	g.Expect(str(helmRepo, "status", "artifact", "metadata", "last-modified")).NotTo(BeEmpty())
	indexURL := str(helmRepo, "status", "artifact", "url")
	g.Expect(str(helmRepo, "status", "url")).To(Equal(indexURL[:strings.LastIndex(indexURL, "/")+1] + "index.idx"))

	// OCIRepository: the layer's content, the manifest's annotations as metadata.
	oci := mustObject(g, ociRepositoryGVK, s.ns, "manifests")
	art = checkArtifact(s, curl, storage, oci, "ocirepository/consumer/manifests/"+strings.TrimPrefix(manifestDigest, "sha256:")+".tar.gz", "v1@"+manifestDigest)
	g.Expect(tarFiles(g, art)).To(Equal([]string{"app.yaml"}))
	g.Expect(oci.Object["status"].(map[string]any)["artifact"].(map[string]any)["metadata"]).To(Equal(map[string]any{
		"org.opencontainers.image.source":   annotations["org.opencontainers.image.source"],
		"org.opencontainers.image.revision": annotations["org.opencontainers.image.revision"],
	}))
}

// checkArtifact checks the Flux artifact fields of obj's status, downloads the artifact by its
// URL with curl and checks its digest, size and ETag; path is checked when not empty. It
// returns the bytes served.
func checkArtifact(s *scenario, curl, storage string, obj *unstructured.Unstructured, path, revision string) []byte {
	s.t.Helper()
	g := s.g
	art, _, _ := unstructured.NestedMap(obj.Object, "status", "artifact")
	g.Expect(art).To(HaveKey("path"), "%s: %v", obj.GetKind(), art)
	for _, field := range []string{"url", "revision", "digest", "lastUpdateTime", "size"} {
		g.Expect(art).To(HaveKey(field), "%s %s", obj.GetKind(), obj.GetName())
	}
	if path != "" {
		g.Expect(art["path"]).To(Equal(path))
	}
	g.Expect(art["url"]).To(MatchRegexp(`^%s[A-Za-z0-9_-]{22}/%s$`, regexp.QuoteMeta(storage), regexp.QuoteMeta(art["path"].(string))),
		"the URL is the advertised address, the object's signature and the path")
	g.Expect(art["revision"]).To(Equal(revision))
	g.Expect(art["digest"]).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	_, err := time.Parse(time.RFC3339, art["lastUpdateTime"].(string))
	g.Expect(err).NotTo(HaveOccurred())

	got := curlGet(s, curl, art["url"].(string))
	g.Expect(got.Digest).To(Equal(art["digest"]), "%s %s: the bytes served match status.artifact.digest", obj.GetKind(), obj.GetName())
	g.Expect(strconv.Itoa(got.Size)).To(Equal(numberString(art["size"])))
	g.Expect(strings.Trim(got.ETag, `"`)).To(Equal(art["digest"]), "the ETag is the digest")
	return got.Body
}

func numberString(v any) string {
	switch n := v.(type) {
	case int64:
		return strconv.FormatInt(n, 10)
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return ""
}

// curlGet downloads url with curl, in a process of its own, and returns the body, its digest
// and the ETag header.
func curlGet(s *scenario, curl, url string) fetched {
	s.t.Helper()
	dir := s.t.TempDir()
	body, headers := filepath.Join(dir, "body"), filepath.Join(dir, "headers")
	out, err := exec.Command(curl, "--silent", "--show-error", "--fail", "--dump-header", headers, "--output", body, url).CombinedOutput()
	s.g.Expect(err).NotTo(HaveOccurred(), "curl %s: %s", url, out)
	data, err := os.ReadFile(body)
	s.g.Expect(err).NotTo(HaveOccurred())
	head, err := os.ReadFile(headers)
	s.g.Expect(err).NotTo(HaveOccurred())
	f := fetched{Status: 200, Body: data, Size: len(data)}
	sum := sha256.Sum256(data)
	f.Digest = "sha256:" + hex.EncodeToString(sum[:])
	for _, line := range strings.Split(string(head), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "ETag") {
			f.ETag = strings.TrimSpace(v)
		}
	}
	return f
}

// tarFiles lists the regular files of a gzipped tarball, sorted.
func tarFiles(g Gomega, data []byte) []string {
	var names []string
	walkTar(g, data, func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	})
	sort.Strings(names)
	return names
}

// tarFile returns a file of a gzipped tarball.
func tarFile(g Gomega, data []byte, name string) string {
	var content []byte
	walkTar(g, data, func(h *tar.Header, r io.Reader) {
		if h.Name == name {
			content, _ = io.ReadAll(r)
		}
	})
	g.Expect(content).NotTo(BeNil(), "%s not in the archive", name)
	return string(content)
}

func walkTar(g Gomega, data []byte, f func(*tar.Header, io.Reader)) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		f(h, tr)
	}
}
