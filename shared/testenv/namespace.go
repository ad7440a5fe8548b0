package testenv

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxNamespacePrefix keeps generated names readable and well under the 63 characters of a
// namespace name (the API server appends 5).
const maxNamespacePrefix = 40

// Namespace creates a namespace of its own for the test t, so that tests never see each other's
// objects, and deletes it when the test ends. Its name starts with the test's name, so that a
// failing test's objects are easy to find; the API server makes it unique (generateName).
// envtest runs no namespace controller: a deleted namespace stays Terminating, and the objects
// in it stay, but no new object can be created in it.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(e.Client.Delete(context.Background(), ns))
	})
	return ns.Name
}

// namespacePrefix is a DNS label prefix made of the test's name: lower case letters and digits,
// every other run of characters a single '-', ending in '-'.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := true // no leading '-'
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= maxNamespacePrefix {
			break
		}
	}
	p := strings.TrimRight(b.String(), "-")
	if p == "" {
		p = "test"
	}
	return p + "-"
}
