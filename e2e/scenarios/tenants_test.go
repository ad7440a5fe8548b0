package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantsSet stamps out, per tenant, a namespace with the Git credentials, an account that may
// do anything in it (and nothing elsewhere), a GitRepository, and a ResourceSet of its own that
// creates the tenant's ManifestGeneration once the GitRepository is Ready (dependsOn with a CEL
// readyExpr). The tenant's ResourceSet and ManifestGeneration apply as the tenant's account.
const tenantsSet = `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenants
spec:
  serviceAccountName: applier
  inputs:
    - tenant: team1
    - tenant: team2
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: tenants-<< inputs.tenant >>
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: applier
        namespace: tenants-<< inputs.tenant >>
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: RoleBinding
      metadata:
        name: applier
        namespace: tenants-<< inputs.tenant >>
      roleRef:
        apiGroup: rbac.authorization.k8s.io
        kind: ClusterRole
        name: __TENANT_ROLE__
      subjects:
        - kind: ServiceAccount
          name: applier
          namespace: tenants-<< inputs.tenant >>
    - apiVersion: v1
      kind: Secret
      metadata:
        name: git-credentials
        namespace: tenants-<< inputs.tenant >>
      stringData:
        username: __USER__
        password: __PASSWORD__
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: GitRepository
      metadata:
        name: fleet
        namespace: tenants-<< inputs.tenant >>
      spec:
        interval: 1m
        url: __URL__
        secretRef:
          name: git-credentials
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      metadata:
        name: sync
        namespace: tenants-<< inputs.tenant >>
      spec:
        serviceAccountName: applier
        dependsOn:
          - apiVersion: source.toolkit.fluxcd.io/v1
            kind: GitRepository
            name: fleet
            ready: true
            readyExpr: |
              status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && has(status.artifact)
        resources:
          - apiVersion: generator.toolkit.fluxcd.io/v1alpha1
            kind: ManifestGeneration
            metadata:
              name: apps
              namespace: tenants-<< inputs.tenant >>
            spec:
              serviceAccountName: applier
              sourceRef:
                kind: GitRepository
                name: fleet
              path: ./tenants/<< inputs.tenant >>
              interval: 10m
              prune: true
`

// Tenants from a ResourceSet: each input gives a namespace synced from its own path of the
// fleet repository; adding a tenant adds its objects, removing one garbage-collects them.
func TestScenarioTenants(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "tenants")
	g := s.g
	files := map[string]string{}
	for _, team := range []string{"team1", "team2", "team3"} {
		files["tenants/"+team+"/app.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  tenant: %s\n", team)
		s.watchNamespace("tenants-" + team)
	}
	repo, sha := s.newRepo("tenants-fleet", files)
	// What a tenant's account may do in its namespace; the platform's account, which makes the
	// tenants, may make namespaces, what it puts in them, and bind tenants' accounts to that role.
	tenantRole := s.clusterRole("tenant", false, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	write := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	s.clusterRole("tenants", true,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces", "secrets", "serviceaccounts"}, Verbs: write},
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: write},
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{tenantRole}},
		rbacv1.PolicyRule{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: write},
		rbacv1.PolicyRule{APIGroups: []string{"fluxcd.controlplane.io"}, Resources: []string{"resourcesets"}, Verbs: write},
	)
	rset := s.create(tenantsSet, "__URL__", repo.HTTPURL(), "__USER__", gitUser, "__PASSWORD__", gitPassword, "__TENANT_ROLE__", tenantRole)[0]

	// tenantSynced waits until the tenant's chain is through: source, its ResourceSet, the
	// generation and the ConfigMap it applied.
	tenantSynced := func(team string) {
		t.Helper()
		ns := "tenants-" + team
		g.Eventually(readyOf(gitRepositoryGVK, ns, "fleet"), timeout).Should(Equal("True|Succeeded|stored artifact for revision 'master@sha1:" + sha + "'"))
		g.Eventually(readyOf(resourceSetGVK, ns, "sync"), timeout).Should(HavePrefix("True|ReconciliationSucceeded|"))
		settled(g, manifestGenerationGVK, ns, "apps", Equal("True|ReconciliationSucceeded|Applied revision: master@sha1:"+sha),
			inventoryOf([]string{ns + "_app__ConfigMap"}))
		g.Expect(mustObject(g, configMapGVK, ns, "app").Object["data"]).To(Equal(map[string]any{"tenant": team}))
		// The generation was created only once its source was Ready.
		source := mustObject(g, gitRepositoryGVK, ns, "fleet")
		readySince := conditionTime(g, source, "Ready")
		created := mustObject(g, manifestGenerationGVK, ns, "apps").GetCreationTimestamp().Time
		g.Expect(created).NotTo(BeTemporally("<", readySince), "%s: the ManifestGeneration waited for its GitRepository", team)
	}
	tenantEntries := func(teams ...string) []string {
		var ids []string
		for _, team := range teams {
			ns := "tenants-" + team
			ids = append(ids, "_"+ns+"__Namespace", ns+"_fleet_source.toolkit.fluxcd.io_GitRepository",
				ns+"_git-credentials__Secret", ns+"_sync_fluxcd.controlplane.io_ResourceSet",
				ns+"_applier__ServiceAccount", ns+"_applier_rbac.authorization.k8s.io_RoleBinding")
		}
		return ids
	}

	settled(g, resourceSetGVK, s.ns, "tenants", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf(tenantEntries("team1", "team2")))
	tenantSynced("team1")
	tenantSynced("team2")
	g.Expect(object(g, gitRepositoryGVK, "tenants-team3", "fleet")).To(BeNil())

	// A new tenant.
	setTenants(g, rset, "team1", "team2", "team3")
	settled(g, resourceSetGVK, s.ns, "tenants", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf(tenantEntries("team1", "team2", "team3")))
	tenantSynced("team3")

	// A tenant leaves: its source, ResourceSet, generation and what the generation applied
	// are deleted, then its namespace, which the kube-controller-manager's namespace controller
	// finishes deleting.
	setTenants(g, rset, "team2", "team3")
	settled(g, resourceSetGVK, s.ns, "tenants", HavePrefix("True|ReconciliationSucceeded|"), inventoryOf(tenantEntries("team2", "team3")))
	for _, gone := range []struct {
		kind, name string
		exists     func(g Gomega) bool
	}{
		{"GitRepository", "fleet", exists(gitRepositoryGVK, "tenants-team1", "fleet")},
		{"ResourceSet", "sync", exists(resourceSetGVK, "tenants-team1", "sync")},
		{"ManifestGeneration", "apps", exists(manifestGenerationGVK, "tenants-team1", "apps")},
		{"ConfigMap", "app", exists(configMapGVK, "tenants-team1", "app")},
		{"Secret", "git-credentials", exists(corev1.SchemeGroupVersion.WithKind("Secret"), "tenants-team1", "git-credentials")},
	} {
		g.Eventually(gone.exists, timeout).Should(BeFalse(), "%s tenants-team1/%s is garbage-collected", gone.kind, gone.name)
	}
	g.Eventually(func() bool {
		err := k8s().Get(context.Background(), client.ObjectKey{Name: "tenants-team1"}, &corev1.Namespace{})
		return apierrors.IsNotFound(err)
	}, timeout).Should(BeTrue(), "the namespace of the tenant is gone")
	// The others are untouched.
	for _, team := range []string{"team2", "team3"} {
		tenantSynced(team)
	}
}

// setTenants sets the inputs of the tenants ResourceSet.
func setTenants(g Gomega, rset *unstructured.Unstructured, teams ...string) {
	var inputs []any
	for _, team := range teams {
		inputs = append(inputs, map[string]any{"tenant": team})
	}
	setInputs(g, rset, inputs)
}

// conditionTime is the lastTransitionTime of a condition.
func conditionTime(g Gomega, obj *unstructured.Unstructured, typ string) time.Time {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			ts, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
			g.Expect(err).NotTo(HaveOccurred())
			return ts
		}
	}
	g.Expect(typ).To(BeEmpty(), "no %s condition", typ)
	return time.Time{}
}
