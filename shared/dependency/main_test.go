package dependency

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

var (
	env *testenv.Env
	k8s client.Client
	// checker reads as cluster admin through a client that knows the scope of kinds.
	checker *Checker
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = apiextensionsv1.AddToScheme(scheme)
	var err error
	env, err = testenv.Start(testenv.Options{
		Scheme:        scheme,
		ExtraCRDPaths: []string{filepath.Join("testdata", "crds")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	checker = &Checker{Reader: k8s, Cache: NewCache()}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// createObject creates an object of a test kind with the given spec, and then writes its status
// through the status subresource when status is not nil.
func createObject(t *testing.T, apiVersion, kind, ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	if status != nil {
		setStatus(t, obj, status)
	}
	return obj
}

// setStatus replaces the status of an object, as its controller would.
func setStatus(t *testing.T, obj *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	obj.Object["status"] = status
	g.Expect(k8s.Status().Update(context.Background(), obj)).To(Succeed())
}

// readyCondition is a Ready condition as controllers write it.
func readyCondition(status, reason, message string) map[string]any {
	return map[string]any{
		"type": "Ready", "status": status, "reason": reason, "message": message,
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}
}

// check runs the checker of the suite.
func check(ns string, deps ...Ref) error {
	return checker.Check(context.Background(), ns, deps)
}

// beNotReady matches a *NotReadyError with the given message (a string or a matcher).
func beNotReady(msg any) OmegaMatcher {
	return SatisfyAll(BeAssignableToTypeOf(&NotReadyError{}), MatchError(msg))
}
