package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Admission is a control plane for testing an API as a user meets it: objects written as YAML,
// the API server's admission answers, and the kubectl of bin/ with a cluster-admin kubeconfig.
type Admission struct {
	*Env
	// Kubeconfig is the path of a cluster-admin kubeconfig.
	Kubeconfig string
	dir        string
}

// StartAdmission starts the control plane (deploy/crds installed) and writes its kubeconfig.
func StartAdmission(scheme *runtime.Scheme) (*Admission, error) {
	env, err := Start(Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "admission")
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	a := &Admission{Env: env, Kubeconfig: filepath.Join(dir, "kubeconfig"), dir: dir}
	if err := env.WriteKubeconfig(a.Kubeconfig); err != nil {
		a.Stop()
		return nil, err
	}
	return a, nil
}

// Stop stops the control plane and removes the kubeconfig.
func (a *Admission) Stop() {
	_ = a.Env.Stop()
	_ = os.RemoveAll(a.dir)
}

// FromYAML reads a manifest as a user writes it, in namespace ns.
func FromYAML(t testing.TB, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	obj.SetNamespace(ns)
	return obj
}

// CreateYAML creates the manifest in ns and returns the API server's answer.
func (a *Admission) CreateYAML(t testing.TB, ns, manifest string) error {
	t.Helper()
	return a.Client.Create(context.Background(), FromYAML(t, ns, manifest))
}

// ExpectRejected checks that the API server refused an object at admission with the message.
func ExpectRejected(g Gomega, err error, message string) {
	g.Expect(err).To(HaveOccurred(), "expected an admission rejection")
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an admission rejection, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(message))
}

// Kubectl runs the kubectl of bin/ against the control plane.
func (a *Admission) Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(a.Root, "bin")
	if err := CheckBinaries(bin, "kubectl"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+a.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
