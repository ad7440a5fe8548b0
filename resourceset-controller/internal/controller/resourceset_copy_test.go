package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
  - name: staging
    cluster:
      server: https://staging.example.com:6443
      certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
contexts:
  - name: staging
    context: {cluster: staging, user: admin}
current-context: staging
users:
  - name: admin
    user: {token: s3cr3t}
`

// copyFrom fills a generated ConfigMap and Secret with the data of existing ones, read as the
// ResourceSet's account: a Secret the account may not read makes the ResourceSet wait, and
// nothing is copied. convertKubeConfigFrom sets a ConfigMap's address and ca.crt from a
// kubeconfig Secret. A change to a source reconciles the ResourceSet (it is watched).
func TestResourceSetCopyFromAsTheAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	source := env.Namespace(t)
	g.Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})).To(Succeed())
	// The account may do anything in its namespace (a namespace admin).
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant-admin"},
	})).To(Succeed())
	// In the source namespace the account may read the ConfigMaps and two Secrets only.
	g.Expect(k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: "shared"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"docker-auth", "staging-kubeconfig"}, Verbs: []string{"get"}},
	}})).To(Succeed())
	g.Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: "shared"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "tenant"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "shared"},
	})).To(Succeed())
	info := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: "runtime-info"}, Data: map[string]string{"region": "eu"}}
	g.Expect(k8s.Create(ctx, info)).To(Succeed())
	for name, data := range map[string]map[string][]byte{
		"docker-auth":        {".dockerconfigjson": []byte(`{"auths":{}}`)},
		"admin-token":        {"token": []byte("do-not-copy")},
		"staging-kubeconfig": {"value": []byte(kubeconfig)},
	} {
		g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: name}, Data: data})).To(Succeed())
	}

	key := createResourceSet(t, ns, strings.ReplaceAll(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: copies
spec:
  serviceAccountName: tenant
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: runtime-info
        annotations:
          fluxcd.controlplane.io/copyFrom: SOURCE/runtime-info
    - apiVersion: v1
      kind: Secret
      metadata:
        name: docker-auth
        annotations:
          fluxcd.controlplane.io/copyFrom: SOURCE/docker-auth
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: staging-cluster
        annotations:
          fluxcd.controlplane.io/convertKubeConfigFrom: SOURCE/staging-kubeconfig
      data:
        cluster: staging
`, "SOURCE", source))
	readyIn(t, key)
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "runtime-info").Object["data"]).To(Equal(map[string]any{"region": "eu"}))
	auth := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docker-auth"}, auth)).To(Succeed())
	g.Expect(auth.Data).To(Equal(map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}))
	g.Expect(getObject(g, "v1", "ConfigMap", ns, "staging-cluster").Object["data"]).To(Equal(map[string]any{
		"cluster": "staging", "address": "https://staging.example.com:6443", "ca.crt": "-----BEGIN CERTIFICATE-----\n"}))
	g.Expect(getResourceSet(g, key).Status.ExternalChecksumRefs).To(ConsistOf(
		"ConfigMap/"+source+"/runtime-info", "Secret/"+source+"/docker-auth", "Secret/"+source+"/staging-kubeconfig"))

	// The source changes: the copy follows, without a reconcile request.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(info), info)).To(Succeed())
	info.Data["region"] = "us"
	g.Expect(k8s.Update(ctx, info)).To(Succeed())
	g.Eventually(func(g Gomega) any { return getObject(g, "v1", "ConfigMap", ns, "runtime-info").Object["data"] }, timeout).
		Should(Equal(map[string]any{"region": "us"}))

	// A Secret the account may not read is not copied: the ResourceSet waits and says why.
	updateResourceSet(t, key, func(rs *rsv1.ResourceSet) {
		rs.Spec.Resources = append(rs.Spec.Resources, jsonOf(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n  annotations:\n    fluxcd.controlplane.io/copyFrom: "+source+"/admin-token\n"))
	})
	g.Eventually(rsetCondition(key, meta.ReadyCondition), timeout).Should(And(
		HavePrefix("False|DependencyNotReady|Secret '"+source+"/admin-token' of Secret//stolen cannot be read: "),
		ContainSubstring("cannot get resource \"secrets\"")))
	g.Expect(getObject(g, "v1", "Secret", ns, "stolen")).To(BeNil())
}

// recreateOnFailure: a generated Job that failed is deleted and created again by the next
// reconciliation (its template cannot change, and a failed Job never runs again).
func TestResourceSetRecreatesAFailedJob(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenantNamespace(t)
	key := createResourceSet(t, ns, `
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: jobs
spec:
  resources:
    - apiVersion: batch/v1
      kind: Job
      metadata:
        name: migrate
        annotations:
          fluxcd.controlplane.io/recreateOnFailure: enabled
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: migrate
                image: registry.invalid/migrate:1
`)
	readyIn(t, key)
	job := &batchv1.Job{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job)).To(Succeed())
	first := job.UID

	// The Job fails, as its controller would say (none runs here).
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Failed = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
	}
	g.Expect(k8s.Status().Update(ctx, job)).To(Succeed())
	poke(t, getResourceSet(g, key))
	g.Eventually(func(g Gomega) string {
		j := &batchv1.Job{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, j)).To(Succeed())
		return string(j.UID)
	}, timeout).ShouldNot(Equal(string(first)))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement("Normal JobRecreated: Job/" + ns + "/migrate failed: deleted to be created again (fluxcd.controlplane.io/recreateOnFailure)"))
}
