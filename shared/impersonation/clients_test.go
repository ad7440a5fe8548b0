package impersonation

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// The account of a ResourceSet: its own spec.serviceAccountName, else --default-service-account
// outside the controller's namespace, else the controller itself.
func TestAccount(t *testing.T) {
	c := &Clients{DefaultServiceAccount: "tenant", ControllerNamespace: "sluice-system"}
	for _, tc := range []struct{ ns, sa, want string }{
		{"apps", "deployer", "system:serviceaccount:apps:deployer"},
		{"apps", "", "system:serviceaccount:apps:tenant"},
		{"sluice-system", "", ""},
		{"sluice-system", "deployer", "system:serviceaccount:sluice-system:deployer"},
	} {
		NewWithT(t).Expect(c.Account(tc.ns, tc.sa)).To(Equal(tc.want), "%s/%s", tc.ns, tc.sa)
	}
	open := &Clients{}
	NewWithT(t).Expect(open.Account("apps", "")).To(Equal(""), "no lockdown: the controller's own permissions")
}

// One client per account, built once: the same account gets the same client (no new
// connections, no discovery), and each client acts as its account.
func TestClientsAreCachedPerAccount(t *testing.T) {
	g := NewWithT(t)
	c := &Clients{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Scheme: runtime.NewScheme(),
		Mapper: meta.NewDefaultRESTMapper(nil), DefaultServiceAccount: "tenant"}
	a1, err := c.For("apps", "")
	g.Expect(err).NotTo(HaveOccurred())
	a2, err := c.For("apps", "tenant")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := c.For("billing", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a1.Client).To(BeIdenticalTo(a2.Client), "the same account")
	g.Expect(a1.Poller).To(BeIdenticalTo(a2.Poller))
	g.Expect(b.Client).NotTo(BeIdenticalTo(a1.Client))
	g.Expect(a1.Account).To(Equal("system:serviceaccount:apps:tenant"))
	g.Expect(b.Account).To(Equal("system:serviceaccount:billing:tenant"))
	g.Expect(c.Config.Impersonate.UserName).To(BeEmpty(), "the controller's config is not changed")
}
