package controller

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/cosign/cosigntest"
	"github.com/sluice-gitops/sluice/shared/testserver"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// Tests of the release policies past Flux v1's (docs/automation.md): signatures, pinned digests,
// minimum age, grouping. The registry is the in-process one, the Git server a real one.

// sign signs the image repo@digest of reg with key.
func sign(t *testing.T, reg *testserver.Registry, key cosigntest.KeyPair, repo, digest string) {
	t.Helper()
	ref, err := name.NewDigest(reg.Host()+"/"+repo+"@"+digest, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	key.Sign(t, ref, reg.RemoteOptions()...)
}

// The image of a tag signed by a key the Secret does not hold is never released: the status and
// a Warning event name the tag and why. The next tag signed by a trusted key is released.
func TestAutomationReleasesOnlyVerifiedTags(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	trusted, other := cosigntest.NewKeyPair(t), cosigntest.NewKeyPair(t)
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1"})})
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "cosign-keys"},
		Data: map[string][]byte{"cosign.pub": trusted.Public}})).To(Succeed())
	bad := reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	sign(t, reg, other, "apps/podinfo", bad.String())
	key := f.automateWith(t, func(a *generatorv1.Automation) {
		a.Verify = &generatorv1.ImageVerification{SecretRef: fluxmeta.LocalObjectReference{Name: "cosign-keys"}}
	})

	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(And(
		HaveField("LatestTag", "1.0.0"),
		HaveField("Refused", ConsistOf(And(HaveField("Tag", "1.1.0"), HaveField("Digest", bad.String()),
			HaveField("Reason", ContainSubstring("no matching signatures were found"))))))))
	g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix(
		"Warning TagNotVerified: " + f.ns + ":deployment/podinfo container app: tag 1.1.0 (" + bad.String() + ") is not released: ")))
	g.Consistently(releases(f.ns), 3*time.Second).Should(BeEmpty())
	g.Expect(getGeneration(g, key).Status.Conditions).NotTo(ContainElement(HaveField("Type", generatorv1.AutomationFailedCondition)))

	good := reg.PushImage(t, "apps/podinfo", "1.2.0", day.Add(2*time.Hour))
	sign(t, reg, trusted, "apps/podinfo", good.String())
	g.Eventually(func(g Gomega) {
		gen := getGeneration(g, key)
		g.Expect(gen.Status.Conditions).NotTo(ContainElement(HaveField("Type", generatorv1.AutomationFailedCondition)))
		g.Expect(gen.Status.Automation.Images).To(ConsistOf(HaveField("LatestTag", "1.2.0")))
	}, timeout).Should(Succeed())
	g.Eventually(releases(f.ns), timeout).Should(ConsistOf(HaveField("Spec.ContainerImage.Image", image+":1.2.0")))
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(And(HaveField("LatestTag", "1.2.0"), HaveField("Digest", good.String()))))
	// Refused once: the event is not repeated at every scan (1.2.0 may have been seen before
	// its signature was pushed, and said to have none, once).
	refusals := func(tag string) int {
		n := 0
		for _, e := range eventsOf(key)(g) {
			if strings.Contains(e, "TagNotVerified: "+f.ns+":deployment/podinfo container app: tag "+tag+" ") {
				n++
			}
		}
		return n
	}
	g.Expect(refusals("1.1.0")).To(Equal(1))
	g.Expect(refusals("1.2.0")).To(BeNumerically("<=", 1))
}

// With fluxcd.io/digest.<container>: pinned the image is written tag@digest, and a tag pushed
// again with another image is released again, as a new commit.
func TestAutomationPinsDigestsAndFollowsAMovedTag(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	first := reg.PushImage(t, "apps/podinfo", "stable", day)
	image := reg.Host() + "/apps/podinfo"
	policies := map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "glob:stable", "fluxcd.io/digest.app": "pinned"}
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":stable", policies)})
	f.automate(t)

	// The tag the workload runs is pinned to its digest.
	g.Eventually(releases(f.ns), timeout).Should(ConsistOf(HaveField("Spec.ContainerImage.Image", image+":stable@"+first.String())))
	mu := releases(f.ns)(g)[0]
	g.Eventually(updateReady(client.ObjectKeyFromObject(&mu)), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(f.fileAtHead(t, "apps/podinfo.yaml")).To(ContainSubstring("image: " + image + ":stable@" + first.String()))
	f.publishHead(t)
	g.Eventually(func(g Gomega) string { return deploymentImage(g, f.ns) }, timeout).Should(Equal(image + ":stable@" + first.String()))

	// The tag moves: a new release, a new commit.
	commits := f.commitCount(t)
	moved := reg.PushImage(t, "apps/podinfo", "stable", day.Add(time.Hour))
	g.Eventually(releases(f.ns), timeout).Should(ContainElement(HaveField("Spec.ContainerImage.Image", image+":stable@"+moved.String())))
	g.Eventually(func(g Gomega) string { return f.fileAtHead(t, "apps/podinfo.yaml") }, timeout).
		Should(ContainSubstring("image: " + image + ":stable@" + moved.String()))
	g.Expect(f.commitCount(t)).NotTo(Equal(commits))
	g.Expect(f.changedFiles(t)).To(Equal([]string{"apps/podinfo.yaml"}))
}

// With a minimum age, the newest tag that has aged is released: a younger one waits (the
// status says until when) without holding back the older one, and is released when it comes of
// age. An image whose config says nothing of its creation (1970) ages from when it was first
// seen, kept in the status.
func TestAutomationMinimumAgeNeverStarves(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1", "fluxcd.io/minimum-age.app": "6s"})})
	now := time.Now()
	reg.PushImage(t, "apps/podinfo", "1.1.0", now.Add(-time.Hour)) // aged
	reg.PushImage(t, "apps/podinfo", "1.2.0", now)                 // young
	key := f.automateWith(t, func(a *generatorv1.Automation) { a.MinimumAge = &metav1.Duration{Duration: time.Hour} })

	// The workload's policy (6s) wins over the automation's hour.
	g.Eventually(releases(f.ns), timeout).Should(ConsistOf(HaveField("Spec.ContainerImage.Image", image+":1.1.0")))
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(HaveField("Waiting", And(Not(BeNil()),
		HaveField("Tag", "1.2.0"), HaveField("EligibleAt.Time", BeTemporally("~", now.Add(6*time.Second), 2*time.Second))))))

	g.Eventually(releases(f.ns), 20*time.Second).Should(ContainElement(HaveField("Spec.ContainerImage.Image", image+":1.2.0")))

	// No creation time: the age is counted from the first scan that saw the tag.
	reg.PushImage(t, "apps/podinfo", "1.3.0", time.Unix(0, 0))
	var seen metav1.Time
	g.Eventually(func(g Gomega) []generatorv1.TagSeen {
		img := getGeneration(g, key).Status.Automation.Images[0]
		g.Expect(img.Waiting).NotTo(BeNil())
		g.Expect(img.Waiting.Tag).To(Equal("1.3.0"))
		return img.Seen
	}, timeout).Should(ConsistOf(HaveField("Tag", "1.3.0")))
	seen = getGeneration(g, key).Status.Automation.Images[0].Seen[0].Since
	g.Expect(seen.Time).To(BeTemporally(">", now))
	g.Eventually(releases(f.ns), 20*time.Second).Should(ContainElement(HaveField("Spec.ContainerImage.Image", image+":1.3.0")))
	// The release is created before the scan's status is written.
	g.Eventually(func(g Gomega) *generatorv1.WaitingTag {
		return getGeneration(g, key).Status.Automation.Images[0].Waiting
	}, timeout).Should(BeNil())
}

// With group: perScan, the new tags of three workloads go as one ManifestUpdate, one commit.
func TestAutomationGroupsAScanInOneCommit(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	files := map[string]string{}
	policies := map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1"}
	for _, app := range []string{"alpha", "beta", "gamma"} {
		reg.PushImage(t, "apps/"+app, "1.0.0", day)
		files["apps/"+app+".yaml"] = strings.ReplaceAll(automatedDeployment(reg.Host()+"/apps/"+app+":1.0.0", policies), "podinfo", app)
	}
	f := newUpdateFixture(t, files)
	key := f.automateWith(t, func(a *generatorv1.Automation) { a.Group = generatorv1.GroupPerScan })
	g.Eventually(automationStatus(key), timeout).Should(HaveLen(3))
	commits := f.commitCount(t)

	for _, app := range []string{"alpha", "beta", "gamma"} {
		reg.PushImage(t, "apps/"+app, "1.1.0", day.Add(time.Hour))
	}
	g.Eventually(releases(f.ns), timeout).Should(HaveLen(1))
	mu := releases(f.ns)(g)[0]
	g.Expect(mu.Spec.Workload).To(BeEmpty())
	g.Expect(mu.Spec.ContainerImages).To(HaveLen(3))
	g.Eventually(updateReady(client.ObjectKeyFromObject(&mu)), timeout).Should(HavePrefix("True|Committed|committed "))
	g.Expect(strconv.Atoi(f.commitCount(t))).To(Equal(mustAtoi(t, commits) + 1))
	g.Expect(f.changedFiles(t)).To(ConsistOf("apps/alpha.yaml", "apps/beta.yaml", "apps/gamma.yaml"))
	g.Expect(git(t, f.repo.Dir, "log", "-1", "--format=%B", "refs/heads/master")).To(Equal("Release 3 images\n\n" +
		"- " + f.ns + ":deployment/alpha container app to " + reg.Host() + "/apps/alpha:1.1.0\n" +
		"- " + f.ns + ":deployment/beta container app to " + reg.Host() + "/apps/beta:1.1.0\n" +
		"- " + f.ns + ":deployment/gamma container app to " + reg.Host() + "/apps/gamma:1.1.0"))
}

// A group is verified together: one change that cannot be made, and none is pushed; the
// condition names it.
func TestGroupedUpdateWithOneFailingChangePushesNothing(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment("ghcr.io/stefanprodan/podinfo:6.0.0", nil)})
	head := f.head(t)
	key := f.createUpdate(t, `
metadata:
  name: group
spec:
  generationRef:
    name: apps
  containerImages:
    - workload: __NS__:deployment/podinfo
      container: app
      image: ghcr.io/stefanprodan/podinfo:6.1.0
    - workload: __NS__:deployment/missing
      container: app
      image: ghcr.io/stefanprodan/podinfo:6.1.0
`)
	g.Eventually(updateReady(key), timeout).Should(And(HavePrefix("False|"),
		ContainSubstring("workload "+f.ns+":deployment/missing does not exist")))
	g.Expect(f.head(t)).To(Equal(head))
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Keyless signatures verify offline against the Secret's certificate authority and log key: a
// tag signed by the release workflow's identity is released, one signed by another identity is
// refused.
func TestAutomationReleasesKeylessSignedTags(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	sigstore := cosigntest.NewSigstore(t)
	reg.PushImage(t, "apps/podinfo", "1.0.0", day)
	image := reg.Host() + "/apps/podinfo"
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": automatedDeployment(image+":1.0.0",
		map[string]string{"fluxcd.io/automated": "true", "fluxcd.io/tag.app": "semver:^1", "fluxcd.io/verify.app": "cosign"})})
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "sigstore"},
		Data: map[string][]byte{"fulcio.crt": sigstore.RootPEM, "rekor.pub": sigstore.RekorPublicPEM}})).To(Succeed())
	const issuer = "https://token.actions.githubusercontent.com"
	digestRef := func(d string) name.Digest {
		ref, err := name.NewDigest(image+"@"+d, name.Insecure)
		g.Expect(err).NotTo(HaveOccurred())
		return ref
	}
	byIntruder := reg.PushImage(t, "apps/podinfo", "1.2.0", day.Add(2*time.Hour))
	sigstore.Sign(t, digestRef(byIntruder.String()), "intruder@example.com", issuer, reg.RemoteOptions()...)
	byRelease := reg.PushImage(t, "apps/podinfo", "1.1.0", day.Add(time.Hour))
	sigstore.Sign(t, digestRef(byRelease.String()), "release@ci.example.com", issuer, reg.RemoteOptions()...)
	key := f.automateWith(t, func(a *generatorv1.Automation) {
		a.Verify = &generatorv1.ImageVerification{SecretRef: fluxmeta.LocalObjectReference{Name: "sigstore"},
			MatchOIDCIdentity: []generatorv1.OIDCIdentityMatch{{Issuer: `https://token\.actions\.githubusercontent\.com`, Subject: `release@ci\.example\.com`}}}
	})

	g.Eventually(releases(f.ns), timeout).Should(ConsistOf(HaveField("Spec.ContainerImage.Image", image+":1.1.0")))
	g.Eventually(automationStatus(key), timeout).Should(ConsistOf(And(HaveField("LatestTag", "1.1.0"),
		HaveField("Refused", ConsistOf(HaveField("Tag", "1.2.0"))))))
}
