package apply

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// requests counts the API requests of a client by method.
type requests struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *requests) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		method := req.Method
		switch {
		case req.URL.Query().Get("dryRun") != "":
			method += " dry-run"
		case method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps"):
			method = "LIST"
		}
		r.counts[method]++
		r.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (r *requests) get(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[method]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A first apply of many objects of one kind asks which exist with one LIST, not with a GET
// each, and applies those that do not exist without a dry-run; objects that exist are still
// read, dry-run, adopted and applied over.
func TestFirstApplyListsInsteadOfGetting(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apply-"}}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	// One exists already, created by someone else.
	g.Expect(env.Client.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "cm-0"},
		Data: map[string]string{"v": "old"}})).To(Succeed())

	counted := &requests{counts: map[string]int{}}
	a := newTestApplier(t, counted.RoundTrip)
	const n = 40
	objects := configMaps(ns.Name, "cm", n, "new")
	res, err := a.Apply(t.Context(), Request{Owner: types.NamespacedName{Namespace: ns.Name, Name: "owner"}, Revision: "r1", Objects: objects})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Inventory).To(HaveLen(n))
	g.Expect(strings.Count(res.Changes, "created")).To(Equal(n - 1))
	g.Expect(res.Changes).To(ContainSubstring("ConfigMap/" + ns.Name + "/cm-0 configured"))

	// One LIST of the names, a GET and a dry-run for the object that existed, an apply each (and
	// the LIST of the applied objects' versions that the next no-op reconcile uses).
	g.Expect(counted.get("LIST")).To(Equal(2))
	g.Expect(counted.get(http.MethodGet)).To(Equal(1))
	g.Expect(counted.get(http.MethodPatch + " dry-run")).To(Equal(1))
	g.Expect(counted.get(http.MethodPatch)).To(Equal(n))

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns.Name, Name: "cm-0"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("v", "new"))
}
