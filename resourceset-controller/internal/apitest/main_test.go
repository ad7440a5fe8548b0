// Package apitest checks the fluxcd.controlplane.io/v1 API as a user meets it: the CRDs of
// deploy/crds served by a real kube-apiserver, their admission rules and their print columns.
package apitest

import (
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sluice-gitops/sluice/shared/testenv"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

// env is the control plane of the package, with a cluster-admin kubeconfig for kubectl.
var env *testenv.Admission

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	_ = rsv1.AddToScheme(scheme)
	var err error
	if env, err = testenv.StartAdmission(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// fromYAML reads a manifest as a user writes it, in namespace ns.
func fromYAML(t *testing.T, ns, manifest string) *unstructured.Unstructured {
	return testenv.FromYAML(t, ns, manifest)
}

// createYAML creates the manifest in ns and returns the API server's answer.
func createYAML(t *testing.T, ns, manifest string) error { return env.CreateYAML(t, ns, manifest) }

// expectRejected checks that the API server refused an object at admission with the message.
func expectRejected(g Gomega, err error, message string) { testenv.ExpectRejected(g, err, message) }

// kubectl runs the kubectl of bin/ against the test control plane.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	return env.Kubectl(t, stdin, args...)
}
