// Package apitest checks the generator.toolkit.fluxcd.io/v1alpha1 API as a user meets it: the CRDs of
// deploy/crds served by a real kube-apiserver, their admission rules and their print columns.
package apitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/shared/testenv"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

var (
	env *testenv.Env
	// kubeconfig is a cluster-admin kubeconfig for the kubectl in bin/.
	kubeconfig string
	nsCounter  atomic.Int32
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = generatorv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.Start(testenv.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := run(m)
	_ = env.Stop()
	os.Exit(code)
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apitest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("apitest-%d", nsCounter.Add(1))}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// fromYAML reads a manifest as a user writes it, in namespace ns.
func fromYAML(t *testing.T, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	obj.SetNamespace(ns)
	return obj
}

// createYAML creates the manifest in ns and returns the API server's answer.
func createYAML(t *testing.T, ns, manifest string) error {
	t.Helper()
	return env.Client.Create(context.Background(), fromYAML(t, ns, manifest))
}

// expectRejected checks that the API server refused an object at admission with the message.
func expectRejected(g Gomega, err error, message string) {
	g.Expect(err).To(HaveOccurred(), "expected an admission rejection")
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an admission rejection, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(message))
}

// kubectl runs the kubectl of bin/ against the test control plane.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(env.Root, "bin")
	if err := testenv.CheckBinaries(bin, "kubectl"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
