package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// runnerSidecar is the component of single-tenant installs: the manifest-generator runs the
// sessions of .flux.yaml commands in a runner container of its own pod instead of session pods.
const runnerSidecar = "runner-sidecar"

// deploy/components/runner-sidecar, in the overlay its kustomization.yaml shows, changes nothing
// but the manifest-generator Deployment and the namespace's enforced Pod Security level; applied
// over a running deploy/default, the API server takes it, the manifest-generator has its runner
// and the manager talks to it, PodSecurity enforces baseline and warns about the runner alone;
// applying deploy/default again brings the session pods back.
func TestDeployRunnerSidecarComponent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	defaults := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	applyObjects(t, defaults)
	// The other tests see deploy/default.
	t.Cleanup(func() { applyObjects(t, defaults) })

	objects := buildObjects(t, componentOverlay(t, runnerSidecar))
	changed, added := compareObjects(defaults, objects)
	g.Expect(changed).To(ConsistOf("Namespace//"+deployNamespace, "Deployment/"+deployNamespace+"/manifest-generator"))
	g.Expect(added).To(BeEmpty())
	g.Expect(objects).To(HaveLen(len(defaults)))

	applyObjects(t, objects)
	deployments := map[string]*appsv1.Deployment{}
	for _, name := range harness.Controllers {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: name}, d)).To(Succeed())
		deployments[name] = d
		checkDeployment(t, d, true)
	}
	mg := deployments["manifest-generator"]
	// A System V segment a session leaves is not the runner's to keep (a namespaced sysctl).
	g.Expect(mg.Spec.Template.Spec.SecurityContext.Sysctls).To(ContainElement(corev1.Sysctl{Name: "kernel.shm_rmid_forced", Value: "1"}))
	checkPodSecurity(t, deployments, true)
	checkOnlyTheControllerHasAToken(t, deployments)
	checkRunnerBoundary(t, mg)
	checkRunnerJobUsers(t, mg)

	// deploy/default again: no runner, session pods, restricted.
	applyObjects(t, defaults)
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(mg), d)).To(Succeed())
	checkDeployment(t, d, false)
	deployments["manifest-generator"] = d
	checkPodSecurity(t, deployments, false)
}

// checkRunnerBoundary checks the runner of the manifest-generator Deployment with
// deploy/components/runner-sidecar (see TestDeployOnlyTheControllerContainerHasAToken): it has no
// token, does not mount /data, does not run as the controller's user or group, and shares the
// socket's directory with the manager.
func checkRunnerBoundary(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	pod := d.Spec.Template.Spec
	manager, runner := containerNamed(pod, "manager"), containerNamed(pod, "runner")
	g.Expect(manager).NotTo(BeNil(), "the manifest-generator's controller container")
	g.Expect(runner).NotTo(BeNil(), "the manifest-generator runs the .flux.yaml commands in a container of their own")
	g.Expect(tokenHolders(pod)).NotTo(ContainElement("runner"))

	// The runner does not see the controller's source checkouts.
	storage, ok := flagValue(manager.Args, "--storage-path")
	g.Expect(ok).To(BeTrue())
	data := mountedVolume(pod, *manager, storage)
	g.Expect(data).NotTo(BeNil(), "--storage-path=%s is not a volume", storage)
	for _, m := range runner.VolumeMounts {
		g.Expect(m.Name).NotTo(Equal(data.Name), "the runner mounts the controller's %s", storage)
	}

	// Another user and group than the controller's.
	managerUID, managerGID := effectiveIDs(pod, *manager)
	runnerUID, runnerGID := effectiveIDs(pod, *runner)
	g.Expect(managerUID).NotTo(BeNil())
	g.Expect(runnerUID).NotTo(BeNil(), "the runner's user must be set, not the image's (the controller's)")
	g.Expect(*runnerUID).NotTo(Equal(*managerUID), "the runner runs as the controller's user")
	g.Expect(managerGID).NotTo(BeNil())
	g.Expect(runnerGID).NotTo(BeNil())
	g.Expect(*runnerGID).NotTo(Equal(*managerGID), "the runner runs with the controller's group")

	// The two meet at the runner's socket, on a volume both mount at the same place. pflag keeps
	// the last value: the manager's sessions go to the runner, not to session pods.
	sessionPods, _ := lastFlagValue(manager.Args, "--session-pods")
	g.Expect(sessionPods).To(Equal("false"), "the manager would start session pods and leave the runner idle")
	socket, ok := lastFlagValue(manager.Args, "--runner-socket")
	g.Expect(ok).To(BeTrue(), "the manager is not told where the runner is: it would start its own")
	runnerSocket, _ := flagValue(runner.Args, "--socket")
	g.Expect(runnerSocket).To(Equal(socket))
	shared := mountedVolume(pod, *manager, filepath.Dir(socket))
	g.Expect(shared).NotTo(BeNil(), "the socket's directory %s is no volume of the manager", filepath.Dir(socket))
	g.Expect(shared.EmptyDir).NotTo(BeNil())
	g.Expect(mountedVolume(pod, *runner, filepath.Dir(socket))).To(Equal(shared))

	// The check itself: a runner that mounts the manager's token volume gets a token.
	mounted := pod.DeepCopy()
	r := containerNamed(*mounted, "runner")
	r.VolumeMounts = append(r.VolumeMounts, corev1.VolumeMount{Name: mountedVolume(pod, *manager, inClusterTokenDir).Name, MountPath: "/token"})
	g.Expect(tokenHolders(*mounted)).To(ConsistOf("manager", "runner"))
}

// jobUsersCapabilities are the capabilities the runner needs to run each session as a user of
// its own, and the only ones it has.
var jobUsersCapabilities = []corev1.Capability{"SETUID", "SETGID", "CHOWN", "FOWNER", "KILL"}

// checkRunnerJobUsers checks the manifest-generator Deployment: each session as a user of its
// own, from a range without root and the controller's user; the runner as root with the
// capabilities to switch to them and nothing more, serving the manager's user alone, which checks
// that root serves the socket; the manager restricted.
func checkRunnerJobUsers(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	pod := d.Spec.Template.Spec
	manager, runner := containerNamed(pod, "manager"), containerNamed(pod, "runner")
	g.Expect(manager).NotTo(BeNil())
	g.Expect(runner).NotTo(BeNil())

	users, ok := flagValue(runner.Args, "--job-users")
	g.Expect(ok).To(BeTrue(), "the runner has no --job-users")
	first, last, _ := strings.Cut(users, "-")
	from, err := strconv.ParseInt(first, 10, 64)
	g.Expect(err).NotTo(HaveOccurred(), users)
	to, err := strconv.ParseInt(last, 10, 64)
	g.Expect(err).NotTo(HaveOccurred(), users)
	g.Expect(from).To(BeNumerically(">", 0), users)
	g.Expect(to).To(BeNumerically(">=", from), users)
	managerUID, _ := effectiveIDs(pod, *manager)
	g.Expect(*managerUID).To(Or(BeNumerically("<", from), BeNumerically(">", to)), "the controller's user is a session user")
	clientUID, _ := flagValue(runner.Args, "--client-uid")
	g.Expect(clientUID).To(Equal(strconv.FormatInt(*managerUID, 10)), "the runner serves the manager's user alone")
	runnerUID, _ := flagValue(manager.Args, "--runner-uid")
	g.Expect(runnerUID).To(Equal("0"), "the manager checks that the runner (root) serves the socket")

	uid, gid := effectiveIDs(pod, *runner)
	g.Expect(*uid).To(BeZero())
	g.Expect(*gid).To(BeZero())
	sc := runner.SecurityContext
	g.Expect(sc.RunAsNonRoot).NotTo(BeNil())
	g.Expect(*sc.RunAsNonRoot).To(BeFalse(), "a root runner must say so")
	g.Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(sc.Capabilities.Add).To(ConsistOf(jobUsersCapabilities))
	g.Expect(sc.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))

	msc := manager.SecurityContext
	g.Expect(*msc.RunAsUser).To(BeEquivalentTo(65532))
	g.Expect(*msc.RunAsGroup).To(BeEquivalentTo(65532))
	g.Expect(msc.RunAsNonRoot).NotTo(BeNil())
	g.Expect(*msc.RunAsNonRoot).To(BeTrue())
	g.Expect(*msc.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(msc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	g.Expect(msc.Capabilities.Add).To(BeEmpty())
}
