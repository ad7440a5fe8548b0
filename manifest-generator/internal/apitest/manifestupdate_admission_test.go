package apitest

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// imageUpdate asks for a new image of one container.
const imageUpdate = `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: podinfo-image
spec:
  generationRef:
    name: podinfo
  workload: default:deployment/podinfo
  containerImage:
    container: podinfod
    image: ghcr.io/stefanprodan/podinfo:6.7.1
`

// policiesUpdate sets one policy and removes two: one with a null value, one without a value.
const policiesUpdate = `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: podinfo-policies
spec:
  generationRef:
    name: podinfo
  workload: default:deployment/podinfo
  policies:
    - name: automated
      value: "true"
    - name: locked
      value: null
    - name: tag.podinfod
`

// A valid image update is accepted; the API server fills in the commit author.
func TestManifestUpdateImageDefaults(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, imageUpdate)).To(Succeed())

	got := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "podinfo-image"}, got)).To(Succeed())
	g.Expect(got.Spec.GenerationRef.Name).To(Equal("podinfo"))
	g.Expect(got.Spec.ContainerImage).To(Equal(&generatorv1.ContainerImageUpdate{
		Container: "podinfod", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}))
	g.Expect(got.Spec.Policies).To(BeNil())
	g.Expect(got.Spec.Git).To(Equal(&generatorv1.GitCommitSpec{
		Author: &generatorv1.CommitAuthor{Name: "Sluice", Email: "sluice@localhost"}}))
	g.Expect(got.GetAuthor()).To(Equal(generatorv1.CommitAuthor{Name: generatorv1.DefaultAuthorName, Email: generatorv1.DefaultAuthorEmail}))
	g.Expect(got.GetMessageTemplate()).To(Equal(generatorv1.DefaultMessageTemplate))
	g.Expect(got.GetBranch()).To(BeEmpty())
	workload, err := got.GetWorkload()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(workload).To(Equal(generatorv1.Workload{Namespace: "default", Kind: "deployment", Name: "podinfo"}))
}

// A policy without a value, or with a null one, is a removal: it round-trips as a nil value, both
// read back typed and as the user reads it.
func TestManifestUpdatePolicyRemovalRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, policiesUpdate)).To(Succeed())

	got := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-policies"}, got)).To(Succeed())
	g.Expect(got.Spec.ContainerImage).To(BeNil())
	g.Expect(got.Spec.Policies).To(HaveLen(3))
	g.Expect(got.Spec.Policies[0].Name).To(Equal("automated"))
	g.Expect(got.Spec.Policies[0].Value).To(HaveValue(Equal("true")))
	g.Expect(got.Spec.Policies[1]).To(Equal(generatorv1.PolicyChange{Name: "locked"}))
	g.Expect(got.Spec.Policies[2]).To(Equal(generatorv1.PolicyChange{Name: "tag.podinfod"}))

	raw := &unstructured.Unstructured{}
	raw.SetAPIVersion(generatorv1.GroupVersion.String())
	raw.SetKind(generatorv1.ManifestUpdateKind)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-policies"}, raw)).To(Succeed())
	policies, _, _ := unstructured.NestedSlice(raw.Object, "spec", "policies")
	g.Expect(policies).To(Equal([]any{
		map[string]any{"name": "automated", "value": "true"},
		map[string]any{"name": "locked"},
		map[string]any{"name": "tag.podinfod"},
	}))

	// An empty value round-trips as written (the controller removes the policy for it).
	empty := ""
	got.Spec.Policies = []generatorv1.PolicyChange{{Name: "locked_msg", Value: &empty}}
	g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
	g.Expect(got.Spec.Policies).To(Equal([]generatorv1.PolicyChange{{Name: "locked_msg", Value: &empty}}))
}

// spec.git round-trips; a partial author is completed with the defaults.
func TestManifestUpdateGit(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: signed
spec:
  generationRef:
    name: podinfo
  workload: apps:statefulset/redis
  containerImage:
    container: redis
    image: redis@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  git:
    branch: image-updates
    author:
      name: Release Bot
    messageTemplate: "chore: {{ .Spec.ContainerImage.Image }}"
    signingKey:
      secretRef:
        name: signing-key
  gates:
    refs: [change-freeze]
`)).To(Succeed())
	got := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "signed"}, got)).To(Succeed())
	g.Expect(got.GetBranch()).To(Equal("image-updates"))
	g.Expect(got.Spec.Git.Author).To(Equal(&generatorv1.CommitAuthor{Name: "Release Bot", Email: "sluice@localhost"}))
	g.Expect(got.GetMessageTemplate()).To(Equal("chore: {{ .Spec.ContainerImage.Image }}"))
	g.Expect(got.GetSigningKey().SecretRef.Name).To(Equal("signing-key"))
	g.Expect(got.GetGates().Refs).To(Equal([]string{"change-freeze"}))
}

func TestManifestUpdateSpecValidation(t *testing.T) {
	ns := env.Namespace(t)
	const oneOf = "exactly one of spec.containerImage, spec.policies or spec.containerImages must be set"
	const workloadRule = "spec.workload is required with spec.containerImage or spec.policies, and not allowed with spec.containerImages"
	const ref = `
  generationRef: {name: podinfo}`
	const image = `
  containerImage: {container: app, image: "nginx:1.15"}`
	const policies = `
  policies:
    - {name: automated, value: "true"}`
	const workload = `
  workload: default:deployment/foo`
	cases := []struct {
		name, spec, rejected string
	}{
		{name: "containerImage and policies", rejected: oneOf, spec: ref + workload + image + policies},
		{name: "neither containerImage nor policies", rejected: oneOf, spec: ref + workload},
		{name: "empty policies", rejected: "spec.policies: Invalid value", spec: ref + workload + `
  policies: []`},
		{name: "workload foo", rejected: "spec.workload must be <namespace>:<kind>/<name>, e.g. default:deployment/foo",
			spec: ref + image + `
  workload: foo`},
		{name: "no workload", rejected: workloadRule, spec: ref + image},
		{name: "containerImages with a workload", rejected: workloadRule, spec: ref + workload + `
  containerImages:
    - {workload: default:deployment/foo, container: app, image: "nginx:1.15"}`},
		{name: "containerImages and containerImage", rejected: oneOf, spec: ref + image + `
  containerImages:
    - {workload: default:deployment/foo, container: app, image: "nginx:1.15"}`},
		{name: "containerImages with a bad workload", rejected: "workload must be <namespace>:<kind>/<name>", spec: ref + `
  containerImages:
    - {workload: foo, container: app, image: "nginx:1.15"}`},
		{name: "containerImages with an image without a tag", rejected: "must be an image with a tag or a digest", spec: ref + `
  containerImages:
    - {workload: default:deployment/foo, container: app, image: nginx}`},
		{name: "pull request on an unknown forge", rejected: "spec.pullRequest.provider: Unsupported value", spec: ref + workload + image + `
  pullRequest: {provider: bitbucket}`},
		{name: "containerImages", spec: ref + `
  containerImages:
    - {workload: default:deployment/foo, container: app, image: "nginx:1.15"}
    - {workload: default:deployment/bar, container: app, image: "nginx:1.15"}
  pullRequest: {provider: gitea}`},
		{name: "no generationRef", rejected: "spec.generationRef: Required value", spec: workload + image},
		{name: "image without a tag", rejected: "spec.containerImage.image must be an image with a tag or a digest: repo:tag or repo@digest",
			spec: ref + workload + `
  containerImage: {container: app, image: nginx}`},
		{name: "image with a space", rejected: "spec.containerImage.image must be an image with a tag or a digest",
			spec: ref + workload + `
  containerImage: {container: app, image: "nginx:1.15 --privileged"}`},
		{name: "image without a container", rejected: "spec.containerImage.container: Required value",
			spec: ref + workload + `
  containerImage: {image: "nginx:1.15"}`},
		{name: "policy with the annotation prefix", rejected: "a policy name is the <policy> of a fluxcd.io/<policy> annotation",
			spec: ref + workload + `
  policies:
    - {name: fluxcd.io/automated, value: "true"}`},
		{name: "policy twice", rejected: "spec.policies[1]: Duplicate value", spec: ref + workload + `
  policies:
    - {name: automated, value: "true"}
    - {name: automated}`},
		{name: "signing key without a secret", rejected: "spec.git.signingKey.secretRef: Required value",
			spec: ref + workload + image + `
  git:
    signingKey: {}`},
		{name: "image with a registry port and a digest", spec: ref + workload + `
  containerImage: {container: app, image: "localhost:5000/team/app:v1.2.3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`},
		{name: "policies", spec: ref + workload + policies},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := createYAML(t, ns, `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: update-`+string(rune('a'+i))+`
spec:`+tc.spec)
			if tc.rejected != "" {
				expectRejected(g, err, tc.rejected)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

// The API server and ParseWorkload agree on the format of spec.workload.
func TestManifestUpdateWorkloadFormat(t *testing.T) {
	ns := env.Namespace(t)
	for i, w := range []string{
		"default:deployment/foo", "kube-system:DaemonSet/node.exporter-1", "a:b/c",
		"foo", "default:deployment", "deployment/foo", ":deployment/foo", "default:/foo",
		"default:deployment/", "Default:deployment/foo", "default:deployment/foo/bar",
		"default:deploy-ment/foo", "<cluster>:namespace/foo", "default:deployment/Foo",
	} {
		t.Run(w, func(t *testing.T) {
			g := NewWithT(t)
			err := createYAML(t, ns, fmt.Sprintf(`
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: workload-%d
spec:
  generationRef: {name: podinfo}
  workload: %q
  policies:
    - {name: locked}`, i, w))
			_, parseErr := generatorv1.ParseWorkload(w)
			if parseErr != nil {
				expectRejected(g, err, "spec.workload must be <namespace>:<kind>/<name>")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func TestManifestUpdateWithoutSpecRejected(t *testing.T) {
	g := NewWithT(t)
	err := createYAML(t, env.Namespace(t), `
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: empty`)
	expectRejected(g, err, "spec: Required value")
}

// The controller records the pushed commit in status.
func TestManifestUpdateStatusRoundTrips(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(createYAML(t, ns, imageUpdate)).To(Succeed())
	mupd := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo-image"}, mupd)).To(Succeed())

	mupd.Status.ObservedGeneration = mupd.Generation
	mupd.Status.Commit = "9f3e1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c"
	mupd.Status.LastHandledReconcileAt = "2024-09-24T09:58:00Z"
	g.Expect(env.Client.Status().Update(ctx, mupd)).To(Succeed())

	got := &generatorv1.ManifestUpdate{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(mupd), got)).To(Succeed())
	g.Expect(got.Status).To(Equal(mupd.Status))
}
