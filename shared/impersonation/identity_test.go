package impersonation

import (
	"context"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// Replays flux-operator's CVE-2026-23990 (an impersonation with an empty user fell back to the
// controller's own identity): the API server, asked who each client is (a SelfSubjectReview),
// answers the account of the object, never the controller, for every combination that names an
// account or falls to --default-service-account. Only the controller's own namespace, with no
// account named, acts as the controller (documented: deploy/ keeps tenants out of it).
//
// Checked against a reintroduced bug: with For building the impersonated config only when the
// object names an account (cfg.Impersonate set from sa instead of account), the default account's
// objects act as the controller and this test fails.
func TestEveryAccountIsTheOneTheAPIServerSees(t *testing.T) {
	g := NewWithT(t)
	c := &Clients{Config: env.Config, Scheme: env.Client.Scheme(), Mapper: env.Client.RESTMapper(),
		DefaultServiceAccount: "tenant", ControllerNamespace: "sluice-system"}
	admin := whoAmI(t, env.Client)
	for _, tc := range []struct{ ns, sa, want string }{
		{"apps", "", "system:serviceaccount:apps:tenant"},
		{"apps", "deployer", "system:serviceaccount:apps:deployer"},
		{"sluice-system", "deployer", "system:serviceaccount:sluice-system:deployer"},
		{"sluice-system", "", admin},
	} {
		cl, err := c.For(tc.ns, tc.sa)
		g.Expect(err).NotTo(HaveOccurred())
		got := whoAmI(t, cl.Client)
		g.Expect(got).To(Equal(tc.want), "%s/%q", tc.ns, tc.sa)
		if tc.ns != "sluice-system" || tc.sa != "" {
			g.Expect(got).NotTo(Equal(admin), "%s/%q acts as the controller", tc.ns, tc.sa)
		}
	}
}

// whoAmI is the user the API server authenticates cl as.
func whoAmI(t *testing.T, cl client.Client) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := cl.Create(context.Background(), review); err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return review.Status.UserInfo.Username
}
