package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/artifact"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// writeTree writes files (path relative to a new directory → content) and returns the directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeTreeInto(t, root, files)
	return root
}

// tarGz archives dir the way the source-controller does: entries walked in lexical order, named
// relative to dir, directories and regular files only, zero times and owners, modes 0755/0644.
func tarGz(t testing.TB, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Format: tar.FormatPAX})
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if fi.Mode()&0o111 != 0 {
				mode = 0o755
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: mode, Format: tar.FormatPAX}); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// artifactServer stands for the source-controller's artifact server: a real loopback HTTP server
// serving tarballs by path and counting the requests per path.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

func serveArtifacts(t testing.TB) *artifactServer {
	t.Helper()
	s := &artifactServer{files: map[string][]byte{}, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

// publish archives dir as revision rev of a GitRepository and returns its status.artifact.
func (s *artifactServer) publish(t testing.TB, rev, dir string) meta.Artifact {
	t.Helper()
	return s.publishBytes(rev, tarGz(t, dir))
}

func (s *artifactServer) publishBytes(rev string, data []byte) meta.Artifact {
	path := "/gitrepository/flux-system/repo/" + rev + ".tar.gz"
	s.mu.Lock()
	s.files[path] = data
	s.mu.Unlock()
	return meta.Artifact{URL: s.URL + path, Digest: sha256Digest(data), Revision: "main@sha1:" + rev}
}

// requests is the number of requests for the artifact.
func (s *artifactServer) requests(art meta.Artifact) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[strings.TrimPrefix(art.URL, s.URL)]
}

// toolsPath is the PATH of the commands: the repository's bin/, where `make tools` builds the
// pinned kustomize, then the system's.
func toolsPath(t testing.TB) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return bin + ":/usr/bin:/bin"
}

// requireKustomize fails (never skips) when the pinned kustomize is missing.
func requireKustomize(t testing.TB) {
	t.Helper()
	bin := strings.SplitN(toolsPath(t), ":", 2)[0]
	if _, err := os.Stat(filepath.Join(bin, "kustomize")); err != nil {
		t.Fatalf("kustomize not found in %s: run `make tools` to build it", bin)
	}
}

// newBuilder returns a Builder with a fresh storage path, the tools PATH and a cache of 16
// results unless opts says otherwise; its checkouts are deleted when the test ends.
func newBuilder(t testing.TB, opts Options) *Builder {
	t.Helper()
	if opts.StoragePath == "" {
		opts.StoragePath = filepath.Join(t.TempDir(), "storage")
	}
	if opts.Path == "" {
		opts.Path = toolsPath(t)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 16
	}
	if opts.CacheSize < 0 {
		opts.CacheSize = 0
	}
	if opts.Fetcher == nil {
		opts.Fetcher = &artifact.Fetcher{Retries: 1}
	}
	if opts.Runner == nil {
		opts.Runner = testRunner
	}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the builder: %v", err)
		}
	})
	return b
}

// specOf is a ManifestGeneration spec for path with the given env (name, value, name, value...).
func specOf(path string, env ...string) generatorv1.ManifestGenerationSpec {
	s := generatorv1.ManifestGenerationSpec{
		SourceRef: generatorv1.SourceReference{Kind: generatorv1.GitRepositoryKind, Name: "repo"},
		Path:      path,
		Interval:  metav1.Duration{Duration: time.Minute},
	}
	for i := 0; i+1 < len(env); i += 2 {
		s.Env = append(s.Env, generatorv1.EnvVar{Name: env[i], Value: env[i+1]})
	}
	return s
}

// names lists objects as "Kind/namespace/name".
func names(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	return out
}

// runs counts the runs of a counting generator.
func runs(t testing.TB, counterDir string) int { return proctest.Runs(t, counterDir) }

// checkoutNames lists the directories under the storage path.
func checkoutNames(t testing.TB, storage string) []string {
	t.Helper()
	des, err := os.ReadDir(storage)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 2
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.5.0
        - name: sidecar
          image: envoyproxy/envoy:v1.30.0
`

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: podinfo
spec:
  ports:
    - port: 9898
`

// countingKustomize is a .flux.yaml whose generator records each run in $COUNTER_DIR/runs (a
// directory outside the artifact, given through spec.env) before running kustomize.
const countingKustomize = `version: 1
commandUpdated:
  generators:
    - command: mktemp "$COUNTER_DIR/run.XXXXXX" >/dev/null && kustomize build .
`

// stagingLayout is docs/fluxyaml.md's layout: .flux.yaml at the root, one overlay per environment.
func stagingLayout(flux string) map[string]string {
	return map[string]string{
		".flux.yaml":                    flux,
		"staging/kustomization.yaml":    "namespace: staging\nnamePrefix: staging-\nresources:\n  - deployment.yaml\n  - service.yaml\n",
		"staging/deployment.yaml":       deploymentYAML,
		"staging/service.yaml":          serviceYAML,
		"production/kustomization.yaml": "namespace: production\nresources:\n  - deployment.yaml\n",
		"production/deployment.yaml":    deploymentYAML,
	}
}

// specFields are the spec fields a test varies.
type specFields struct {
	path    string
	env     []generatorv1.EnvVar
	timeout *metav1.Duration
}

func envVars(nameValues ...string) []generatorv1.EnvVar {
	return specOf("", nameValues...).Env
}

// writeTreeInto adds files to an existing directory.
func writeTreeInto(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testOwner is the ManifestGeneration the tests build for.
var testOwner = runner.Owner{APIVersion: "generator.toolkit.fluxcd.io/v1alpha1", Kind: "ManifestGeneration", Namespace: "default", Name: "test"}
