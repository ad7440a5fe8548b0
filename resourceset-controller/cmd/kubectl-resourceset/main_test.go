package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/shared/testenv"
)

// The tests run the built plugin, as kubectl would: offline for build, against the real
// kube-apiserver and etcd of bin/ for --diff.
var (
	env        *testenv.Env
	kubeconfig string
	plugin     string
	// home is an empty home directory with no kubeconfig, so offline builds never read the
	// developer's ~/.kube/config.
	home string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubectl-resourceset-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	plugin = filepath.Join(dir, "kubectl-resourceset")
	build := exec.Command("go", "build", "-o", plugin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kubectl-resourceset:", err)
		return 1
	}
	home = filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = rsv1.AddToScheme(scheme)
	env, err = testenv.Start(testenv.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// result is what a user sees of one plugin run.
type result struct {
	stdout, stderr string
	exitCode       int
}

// invocation is one run of the plugin: its arguments, stdin and whether it may see the cluster.
type invocation struct {
	args    []string
	stdin   string
	cluster bool
}

// build runs `kubectl resourceset build ARGS` without any kubeconfig.
func build(t *testing.T, args ...string) result {
	t.Helper()
	return runPlugin(t, invocation{args: append([]string{"build"}, args...)})
}

// buildStdin is build with stdin.
func buildStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runPlugin(t, invocation{args: append([]string{"build"}, args...), stdin: stdin})
}

// diff runs `kubectl resourceset build --diff ARGS` with the test cluster's kubeconfig.
func diff(t *testing.T, args ...string) result {
	t.Helper()
	return runPlugin(t, invocation{args: append([]string{"build", "--diff"}, args...), cluster: true})
}

func runPlugin(t *testing.T, inv invocation) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := inv.args
	if inv.cluster {
		args = append([]string{"--kubeconfig", kubeconfig}, args...)
	}
	cmd := exec.CommandContext(ctx, plugin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	cmd.Stdin = strings.NewReader(inv.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running kubectl-resourceset %v: %v", args, err)
	}
	t.Logf("kubectl resourceset %v: exit %d\nstdout:\n%sstderr:\n%s", args, res.exitCode, res.stdout, res.stderr)
	return res
}

// writeFile writes content to a file of the test's temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	NewWithT(t).Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
	return path
}

// parseStream decodes a YAML stream as a user's tool would, whole numbers as int64.
func parseStream(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		g.Expect(err).NotTo(HaveOccurred())
		data, err := yaml.YAMLToJSON(doc)
		g.Expect(err).NotTo(HaveOccurred())
		if string(data) == "null" {
			continue
		}
		obj := &unstructured.Unstructured{}
		g.Expect(obj.UnmarshalJSON(data)).To(Succeed())
		out = append(out, obj)
	}
}

// names are "Kind/namespace/name" of the objects, in order.
func names(objects []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objects))
	for _, o := range objects {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}
