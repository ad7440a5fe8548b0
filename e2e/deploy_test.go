package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

// deployNamespace is where deploy/default puts the controllers.
const deployNamespace = "sluice-system"

// artifactServerLabel is the label the source-controller sets to "leader" on the pod of its
// elected replica (--leader-pod-label), which the artifact Service selects.
const artifactServerLabel = "source.toolkit.fluxcd.io/artifact-server"

// kustomizeBuild renders a kustomization with the real kustomize binary.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := exec.Command(filepath.Join(binDir, "kustomize"), "build", dir).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("kustomize build %s: %s", dir, ee.Stderr)
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "run `make tools` for bin/kustomize")
	return out
}

// buildObjects renders a kustomization and decodes its objects.
func buildObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := ssautils.ReadObjects(bytes.NewReader(kustomizeBuild(t, dir)))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return objects
}

// applyObjects server-side applies objects as a user's `kubectl apply --server-side` would (CRDs
// and namespaces first), with one field owner for every test of this package.
func applyObjects(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	poller := polling.NewStatusPoller(env.Client, env.Client.RESTMapper(), polling.Options{})
	manager := ssa.NewResourceManager(env.Client, poller, ssa.Owner{Field: "sluice-e2e", Group: "e2e.sluice.dev"})
	changes, err := manager.ApplyAllStaged(context.Background(), objects, ssa.DefaultApplyOptions())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes.Entries).To(HaveLen(len(objects)))
}

// flagValue is the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// lastFlagValue is the value of the last --name=value in args, the one pflag keeps, and whether
// there is one.
func lastFlagValue(args []string, name string) (string, bool) {
	for i := len(args) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(args[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// containerNamed is the container of pod called name, or nil.
func containerNamed(pod corev1.PodSpec, name string) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	return nil
}

// containerPort is the port named name of c, or nil.
func containerPort(c corev1.Container, name string) *corev1.ContainerPort {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

func TestDeployDefaultIsAcceptedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	applyObjects(t, objects)

	kinds := map[string][]string{}
	for _, obj := range objects {
		kinds[obj.GetKind()] = append(kinds[obj.GetKind()], obj.GetName())
		got := obj.DeepCopy()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed(), ssautils.FmtUnstructured(obj))
		if obj.GetKind() != "Namespace" && obj.GetKind() != "CustomResourceDefinition" &&
			!strings.HasPrefix(obj.GetKind(), "ClusterRole") && !strings.HasPrefix(obj.GetKind(), "ValidatingAdmissionPolicy") &&
			!strings.HasPrefix(obj.GetKind(), "MutatingAdmissionPolicy") {
			g.Expect(got.GetNamespace()).To(Equal(deployNamespace), ssautils.FmtUnstructured(obj))
		}
	}
	g.Expect(kinds["Deployment"]).To(ConsistOf(harness.Controllers))
	g.Expect(kinds["ServiceAccount"]).To(ConsistOf(harness.Controllers))
	g.Expect(kinds["ClusterRole"]).To(ConsistOf(harness.Controllers))
	g.Expect(kinds["ClusterRoleBinding"]).To(ConsistOf(harness.Controllers))
	// The source-controller's pods of sluice-system (TestRBACEachControllerHasItsOwnAccount).
	g.Expect(kinds["Role"]).To(ConsistOf("source-controller"))
	g.Expect(kinds["RoleBinding"]).To(ConsistOf("source-controller"))
	g.Expect(kinds["Service"]).To(ConsistOf("source-controller", "gating-controller"))
	g.Expect(kinds["NetworkPolicy"]).To(ConsistOf("deny-ingress", "allow-artifacts", "allow-receiver", "allow-webhook-receiver", "allow-event-receiver",
		"allow-scraping", "allow-egress"))
	// Who opened a gate is who did it (TestGateRequestIsMadeInTheNameOfTheAuthenticatedUser).
	// and who responded to an approval is who did it (gating-controller/docs/gateapproval.md).
	g.Expect(kinds["ValidatingAdmissionPolicy"]).To(ConsistOf("gate-requested-by", "gateapproval-identity"))
	g.Expect(kinds["ValidatingAdmissionPolicyBinding"]).To(ConsistOf("gate-requested-by", "gateapproval-identity"))
	// Gated Flux objects are suspended as they are admitted (TestSuspendPolicy).
	g.Expect(kinds["MutatingAdmissionPolicy"]).To(ConsistOf("gated-syncs-suspended"))
	g.Expect(kinds["MutatingAdmissionPolicyBinding"]).To(ConsistOf("gated-syncs-suspended"))

	deployments := map[string]*appsv1.Deployment{}
	for _, name := range harness.Controllers {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: name}, d)).To(Succeed())
		deployments[name] = d
		checkDeployment(t, d, false)
	}

	// The artifact Service: port 80 to the artifact server's port, as Flux's; artifact URLs
	// advertise the Service's DNS name without a port.
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "source-controller"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(80))
	source := deployments["source-controller"]
	manager := source.Spec.Template.Spec.Containers[0]
	// Only the elected replica serves artifacts (a standby's storage is empty): the Service
	// selects the Deployment's pods that carry the label --leader-pod-label sets on the leader's,
	// which the controller finds by POD_NAME and RUNTIME_NAMESPACE.
	leaderLabel, ok := flagValue(manager.Args, "--leader-pod-label")
	g.Expect(ok).To(BeTrue(), "the source-controller labels the leader's pod")
	g.Expect(leaderLabel).To(Equal(artifactServerLabel))
	wantSelector := map[string]string{leaderLabel: "leader"}
	for k, v := range source.Spec.Selector.MatchLabels {
		wantSelector[k] = v
	}
	g.Expect(svc.Spec.Selector).To(Equal(wantSelector))
	g.Expect(source.Spec.Template.Labels).NotTo(HaveKey(leaderLabel), "every new pod would be behind the Service")
	g.Expect(manager.Env).To(ContainElement(And(HaveField("Name", "POD_NAME"), HaveField("ValueFrom.FieldRef.FieldPath", "metadata.name"))))
	artifactPort := containerPort(manager, svc.Spec.Ports[0].TargetPort.String())
	g.Expect(artifactPort).NotTo(BeNil(), "the Service's targetPort %s is no port of the source-controller", svc.Spec.Ports[0].TargetPort.String())
	storageAddr, _ := flagValue(manager.Args, "--storage-addr")
	g.Expect(storageAddr).To(Equal(fmt.Sprintf(":%d", artifactPort.ContainerPort)))
	advAddr, _ := flagValue(manager.Args, "--storage-adv-addr")
	g.Expect(advAddr).To(Equal("source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local."))

	// The gating-controller's Service: port http-receiver to the port --receiver-addr binds (the
	// gate receiver), http-webhook to the port of --webhook-receiver-addr (Flux's Receivers),
	// http-events to the port of --event-receiver-addr (the events of Flux's Alerts), which every
	// controller's --events-addr names.
	receiverSvc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "gating-controller"}, receiverSvc)).To(Succeed())
	g.Expect(receiverSvc.Spec.Ports).To(ConsistOf(HaveField("Name", "http-receiver"), HaveField("Name", "http-webhook"), HaveField("Name", "http-events")))
	gating := deployments["gating-controller"]
	g.Expect(receiverSvc.Spec.Selector).To(Equal(gating.Spec.Selector.MatchLabels))
	for _, p := range receiverSvc.Spec.Ports {
		flag := map[string]string{"http-receiver": "--receiver-addr", "http-webhook": "--webhook-receiver-addr", "http-events": "--event-receiver-addr"}[p.Name]
		port := containerPort(gating.Spec.Template.Spec.Containers[0], p.TargetPort.String())
		g.Expect(port).NotTo(BeNil(), "the Service's targetPort %s is no port of the gating-controller", p.TargetPort.String())
		addr, _ := flagValue(gating.Spec.Template.Spec.Containers[0].Args, flag)
		g.Expect(addr).To(Equal(fmt.Sprintf(":%d", port.ContainerPort)), flag)
	}

	for name, d := range deployments {
		events, _ := flagValue(d.Spec.Template.Spec.Containers[0].Args, "--events-addr")
		g.Expect(events).To(Equal(fmt.Sprintf("http://gating-controller.$(RUNTIME_NAMESPACE).svc.cluster.local.:%d/", servicePort(receiverSvc, "http-events"))), name)
	}

	checkNetworkPolicies(t, deployments)
	checkPodSecurity(t, deployments, false)
}

// checkDeployment checks one controller's Deployment as the API server stored it, from
// deploy/default, or with deploy/components/runner-sidecar when runnerSidecar is set.
func checkDeployment(t *testing.T, d *appsv1.Deployment, runnerSidecar bool) {
	t.Helper()
	g := NewWithT(t)
	name := d.Name
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal(name))
	// The controller is the container manager. The manifest-generator runs the .flux.yaml
	// commands in session pods of their own; with the runner sidecar, in its runner container
	// (TestDeployOnlyTheControllerContainerHasAToken).
	var names []string
	for _, c := range pod.Containers {
		names = append(names, c.Name)
		g.Expect(c.Image).To(HavePrefix("ghcr.io/sluice-gitops/"+name+":"), "%s: %s", name, c.Name)
	}
	if name == "manifest-generator" && runnerSidecar {
		g.Expect(names).To(Equal([]string{"manager", "runner"}), name)
	} else {
		g.Expect(names).To(Equal([]string{"manager"}), name)
	}
	g.Expect(pod.InitContainers).To(BeEmpty(), name)
	c := *containerNamed(pod, "manager")
	// Every volume is some container's: nothing is left of a container that is gone.
	for _, v := range pod.Volumes {
		g.Expect(slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool {
			return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name })
		})).To(BeTrue(), "%s: no container mounts the volume %s", name, v.Name)
	}
	if name == "manifest-generator" {
		// pflag keeps the last value of a flag: the component appends --session-pods=false.
		sessionPods, ok := lastFlagValue(c.Args, "--session-pods")
		g.Expect(ok).To(BeTrue(), "the manifest-generator says where the sessions run")
		// The session pods run the manager's image, which it reads from its own Pod.
		g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "POD_NAME"), HaveField("ValueFrom.FieldRef.FieldPath", "metadata.name"))))
		socket, hasSocket := lastFlagValue(c.Args, "--runner-socket")
		if runnerSidecar {
			g.Expect(sessionPods).To(Equal("false"), "the runner sidecar runs the sessions")
			g.Expect(hasSocket).To(BeTrue(), "the manager is not told where the runner is: it would start its own")
			g.Expect(socket).NotTo(BeEmpty())
		} else {
			g.Expect(c.Args).To(ContainElement("--session-pods=true"))
			g.Expect(sessionPods).To(Equal("true"), "each session runs in a pod of its own")
			g.Expect(hasSocket).To(BeFalse(), "no runner serves a socket")
			g.Expect(pod.SecurityContext.Sysctls).To(BeEmpty(), "the runner's sysctl, without a runner")
		}
	}

	// Every flag the Deployment passes is one the binary has.
	help := controllerHelp(t, name)
	for _, arg := range c.Args {
		flag, _, _ := strings.Cut(arg, "=")
		g.Expect(help).To(ContainSubstring(flag+" "), "%s passes %s, which the binary does not have", name, flag)
	}
	if runner := containerNamed(pod, "runner"); runner != nil {
		g.Expect(runner.Command).To(BeEmpty(), "the image's entrypoint is the binary")
		g.Expect(runner.Args).NotTo(BeEmpty())
		g.Expect(runner.Args[0]).To(Equal("runner"), "the runner subcommand")
		out, _ := exec.Command(filepath.Join(binDir, name), "runner", "--help").CombinedOutput()
		for _, arg := range runner.Args[1:] {
			flag, _, _ := strings.Cut(arg, "=")
			// pflag's --flag or the flag package's -flag.
			g.Expect(string(out)).To(MatchRegexp(`(^|\s)--?`+regexp.QuoteMeta(strings.TrimLeft(flag, "-"))+`\s`),
				"%s runner passes %s, which the subcommand does not have", name, flag)
		}
	}
	g.Expect(c.Args).To(ContainElement("--enable-leader-election"), name)

	// The ports the controller binds are the ports the pod declares, and the probes use them.
	for flag, port := range map[string]string{"--metrics-addr": "http-prom", "--health-addr": "healthz"} {
		addr, ok := flagValue(c.Args, flag)
		g.Expect(ok).To(BeTrue(), "%s: %s", name, flag)
		p := containerPort(c, port)
		g.Expect(p).NotTo(BeNil(), "%s: port %s", name, port)
		g.Expect(addr).To(Equal(fmt.Sprintf(":%d", p.ContainerPort)), "%s: %s", name, flag)
	}
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port.String()).To(Equal("healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port.String()).To(Equal("healthz"))
	g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("prometheus.io/port", strconv.Itoa(int(containerPort(c, "http-prom").ContainerPort))))

	g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "RUNTIME_NAMESPACE"),
		HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace"))), name)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		g.Expect(c.Resources.Requests).To(HaveKey(r), name)
		g.Expect(c.Resources.Limits).To(HaveKey(r), name)
	}

	// Restricted: non-root, read-only root filesystem, no privilege escalation, no capabilities,
	// RuntimeDefault seccomp. The pod says non-root unless a container of it must be root (the
	// manifest-generator's runner): the manager then says it itself.
	nonRoot := pod.SecurityContext.RunAsNonRoot
	if c.SecurityContext.RunAsNonRoot != nil {
		nonRoot = c.SecurityContext.RunAsNonRoot
	}
	g.Expect(nonRoot).NotTo(BeNil(), name)
	g.Expect(*nonRoot).To(BeTrue(), name)
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	sc := c.SecurityContext
	g.Expect(*sc.RunAsUser).NotTo(BeZero())
	g.Expect(*sc.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(sc.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))

	// Writable places are volumes: /tmp, and the storage path of the controllers that have one.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounted := func(path string) *corev1.Volume {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path {
				v := volumes[m.Name]
				return &v
			}
		}
		return nil
	}
	tmp := mounted("/tmp")
	g.Expect(tmp).NotTo(BeNil(), "%s: /tmp", name)
	g.Expect(tmp.EmptyDir).NotTo(BeNil(), "%s: /tmp", name)
	if storage, ok := flagValue(c.Args, "--storage-path"); ok {
		g.Expect(mounted(storage)).NotTo(BeNil(), "%s: --storage-path=%s is not a volume", name, storage)
	}
	if name == "source-controller" || name == "manifest-generator" {
		g.Expect(c.Args).To(ContainElement(HavePrefix("--storage-path=")), name)
	}
	if name == "manifest-generator" {
		path, ok := flagValue(c.Args, "--generator-path")
		g.Expect(ok).To(BeTrue(), "the manifest-generator needs --generator-path: the image's tools are not on the controller's default PATH")
		g.Expect(filepath.SplitList(path)).To(ContainElements(generatorImageDirs(t)))
	}
}

// checkPodSecurity creates (dry-run) a pod from each Deployment's template in sluice-system.
//
// deploy/default enforces, warns and audits at the restricted Pod Security Standard: the API
// server's PodSecurity admission accepts every pod without a warning, and refuses a pod that is
// baseline but not restricted (a manager that may escalate its privileges), so the check is real.
//
// With deploy/components/runner-sidecar (runnerSidecar), the namespace enforces baseline, which
// the manifest-generator's runner needs to switch each session to a user of its own, and still
// warns and audits at restricted: PodSecurity accepts every pod, warns about the runner alone
// (every other container is restricted), accepts the manager that may escalate with a warning,
// and refuses a pod beyond baseline.
func checkPodSecurity(t *testing.T, deployments map[string]*appsv1.Deployment, runnerSidecar bool) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: deployNamespace}, ns)).To(Succeed())
	enforce := "restricted"
	if runnerSidecar {
		enforce = "baseline"
	}
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", enforce))
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/warn", "restricted"))
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/audit", "restricted"))
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	dryRun := func(pod *corev1.Pod) ([]string, error) {
		warnings.take()
		_, err := cs.CoreV1().Pods(deployNamespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return warnings.take(), err
	}
	g.Expect(deployments).To(HaveLen(len(harness.Controllers)))
	for name, d := range deployments {
		got, err := dryRun(podFromTemplate(d))
		g.Expect(err).NotTo(HaveOccurred(), name)
		if name != "manifest-generator" || !runnerSidecar {
			g.Expect(got).To(BeEmpty(), "%s is restricted", name)
		} else {
			g.Expect(got).To(ContainElement(And(ContainSubstring(`PodSecurity "restricted`), ContainSubstring(`"runner"`))))
			g.Expect(strings.Join(got, "\n")).NotTo(ContainSubstring(`"manager"`), "the manager is restricted")
		}

		// The check is real: a manager that may escalate its privileges is baseline, not
		// restricted.
		escalating := podFromTemplate(d)
		escalate := true
		containerNamed(escalating.Spec, "manager").SecurityContext.AllowPrivilegeEscalation = &escalate
		got, err = dryRun(escalating)
		if runnerSidecar {
			g.Expect(err).NotTo(HaveOccurred(), "%s: baseline is enforced", name)
			g.Expect(got).To(ContainElement(And(ContainSubstring(`PodSecurity "restricted`), ContainSubstring("allowPrivilegeEscalation"), ContainSubstring(`"manager"`))), name)
		} else {
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", name, err)
			g.Expect(err.Error()).To(And(ContainSubstring(`PodSecurity "restricted`), ContainSubstring("allowPrivilegeEscalation"), ContainSubstring(`"manager"`)), name)
		}
	}
	if !runnerSidecar {
		// A capability restricted allows none of (baseline neither) is refused too.
		raw := podFromTemplate(deployments["manifest-generator"])
		m := containerNamed(raw.Spec, "manager")
		m.SecurityContext.Capabilities.Add = append(m.SecurityContext.Capabilities.Add, "NET_RAW")
		_, err = dryRun(raw)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(And(ContainSubstring(`PodSecurity "restricted`), ContainSubstring("NET_RAW")))
		return
	}
	// The check is real: a capability beyond the baseline's is refused.
	bad := podFromTemplate(deployments["manifest-generator"])
	r := containerNamed(bad.Spec, "runner")
	r.SecurityContext.Capabilities.Add = append(r.SecurityContext.Capabilities.Add, "SYS_ADMIN")
	_, err = dryRun(bad)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("baseline"))
}

// checkNetworkPolicies reads the NetworkPolicies of sluice-system back from the API server and
// evaluates them for the pods of each Deployment.
func checkNetworkPolicies(t *testing.T, deployments map[string]*appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	list := &networkingv1.NetworkPolicyList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(deployNamespace))).To(Succeed())
	policies := list.Items
	// Any other pod someone runs in sluice-system accepts nothing either.
	g.Expect(ingressAllowed(policies, corev1.PodTemplateSpec{}, 8080, fromSluiceSystem)).To(BeFalse(), "an unlabelled pod of sluice-system")
	for name, d := range deployments {
		pod := d.Spec.Template
		// Prometheus, in any namespace, scrapes every controller.
		g.Expect(ingressAllowed(policies, pod, 8080, fromTenant)).To(BeTrue(), "%s: metrics from another namespace", name)
		// Nothing else gets in: not the health port, not an arbitrary port, not from the namespace itself.
		g.Expect(ingressAllowed(policies, pod, 9440, fromTenant)).To(BeFalse(), "%s: health port from another namespace", name)
		g.Expect(ingressAllowed(policies, pod, 9440, fromSluiceSystem)).To(BeFalse(), "%s: health port from sluice-system", name)
		g.Expect(ingressAllowed(policies, pod, 12345, fromSluiceSystem)).To(BeFalse(), "%s: an unknown port", name)
	}
	// The webhook receiver is reached from anywhere (its requests carry the Gate's token); the
	// other controllers' pods accept nothing on its port.
	receiver := deployments["gating-controller"].Spec.Template
	g.Expect(ingressAllowed(policies, receiver, 9292, fromTenant)).To(BeTrue(), "the receiver from another namespace")
	g.Expect(ingressAllowed(policies, deployments["source-controller"].Spec.Template, 9292, fromTenant)).To(BeFalse(), "port 9292 of another controller")
	checkArtifactAccess(t, policies, deployments)
}

// origin is the pod a connection comes from: whether it runs in sluice-system, the labels of its
// namespace and its own.
type origin struct {
	sameNamespace              bool
	namespaceLabels, podLabels map[string]string
}

var (
	// fromSluiceSystem is an unlabelled pod of sluice-system.
	fromSluiceSystem = origin{sameNamespace: true, namespaceLabels: map[string]string{corev1.LabelMetadataName: deployNamespace}}
	// fromTenant is an unlabelled pod of another namespace.
	fromTenant = origin{namespaceLabels: map[string]string{corev1.LabelMetadataName: "tenant"}}
)

// ingressAllowed evaluates Kubernetes NetworkPolicy semantics for a connection to port of a pod
// of sluice-system made from a pod of origin: a pod no Ingress policy selects accepts
// everything; a selected pod accepts what one rule of one selecting policy allows. Peers and
// ports are read as the API defines them; an ipBlock matches no pod.
func ingressAllowed(policies []networkingv1.NetworkPolicy, pod corev1.PodTemplateSpec, port int32, from origin) bool {
	isolated := false
	for _, p := range policies {
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !selects(&p.Spec.PodSelector, pod.Labels) {
			continue
		}
		isolated = true
		for _, rule := range p.Spec.Ingress {
			if peersAllow(rule.From, from) && portsAllow(rule.Ports, pod.Spec, port) {
				return true
			}
		}
	}
	return !isolated
}

func selects(s *metav1.LabelSelector, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(podLabels))
}

func peersAllow(peers []networkingv1.NetworkPolicyPeer, from origin) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
		case p.NamespaceSelector != nil:
			// Pods of the selected namespaces (matching PodSelector, when set).
			if selects(p.NamespaceSelector, from.namespaceLabels) && (p.PodSelector == nil || selects(p.PodSelector, from.podLabels)) {
				return true
			}
		case p.PodSelector != nil:
			// Pods of the policy's own namespace.
			if from.sameNamespace && selects(p.PodSelector, from.podLabels) {
				return true
			}
		}
	}
	return false
}

func portsAllow(ports []networkingv1.NetworkPolicyPort, pod corev1.PodSpec, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.StrVal == "" && p.Port.IntVal == port {
			return true
		}
		for _, c := range pod.Containers {
			if cp := containerPort(c, p.Port.StrVal); p.Port.StrVal != "" && cp != nil && cp.ContainerPort == port {
				return true
			}
		}
	}
	return false
}

// deploymentsIn decodes the Deployments of objects, by name.
func deploymentsIn(t *testing.T, objects []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, o := range objects {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			NewWithT(t).Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
			out[d.Name] = d
		}
	}
	return out
}

// inClusterTokenDir is where client-go's in-cluster config reads the token, ca.crt and namespace.
const inClusterTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenHolders are the containers (init containers included) of a pod that get a ServiceAccount
// token: all of them when the pod does not set automountServiceAccountToken: false (the
// ServiceAccount admission mounts one into each), and those that mount a projected volume with a
// serviceAccountToken source.
func tokenHolders(pod corev1.PodSpec) []string {
	automount := pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken
	tokens := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool {
			return s.ServiceAccountToken != nil
		}) {
			tokens[v.Name] = true
		}
	}
	var out []string
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if automount || slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return tokens[m.Name] }) {
			out = append(out, c.Name)
		}
	}
	return out
}

// mountedVolume is the volume c mounts at path, or nil.
func mountedVolume(pod corev1.PodSpec, c corev1.Container, path string) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == filepath.Clean(path) {
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == m.Name {
					return &pod.Volumes[i]
				}
			}
		}
	}
	return nil
}

// effectiveIDs are the uid and gid a container runs as: its securityContext over the pod's.
func effectiveIDs(pod corev1.PodSpec, c corev1.Container) (uid, gid *int64) {
	if psc := pod.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	return uid, gid
}

// The trust boundary of deploy/: only a controller container (manager) holds a ServiceAccount
// token. The manifest-generator runs the .flux.yaml commands from Git in session pods of their
// own, outside its pod (deploy/default); with deploy/components/runner-sidecar, in its runner
// container, which has no token, does not mount the controller's checkouts (--storage-path), runs
// as another user and group, and reaches the manager only over the socket directory they share.
func TestDeployOnlyTheControllerContainerHasAToken(t *testing.T) {
	g := NewWithT(t)
	deployments := deploymentsIn(t, buildObjects(t, filepath.Join(env.Root, "deploy", "default")))
	checkOnlyTheControllerHasAToken(t, deployments)
	g.Expect(containerNamed(deployments["manifest-generator"].Spec.Template.Spec, "runner")).To(BeNil(),
		"the sessions run in pods of their own")

	sidecar := deploymentsIn(t, buildObjects(t, componentOverlay(t, runnerSidecar)))
	checkOnlyTheControllerHasAToken(t, sidecar)
	checkRunnerBoundary(t, sidecar["manifest-generator"])
	checkRunnerJobUsers(t, sidecar["manifest-generator"])
}

// checkOnlyTheControllerHasAToken checks that every container but manager of the Deployments of
// deploy/default, with or without components, is without a token (see
// TestDeployOnlyTheControllerContainerHasAToken).
func checkOnlyTheControllerHasAToken(t *testing.T, deployments map[string]*appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(deployments).To(HaveLen(len(harness.Controllers)))
	for name, d := range deployments {
		pod := d.Spec.Template.Spec
		g.Expect(tokenHolders(pod)).To(ConsistOf("manager"), "%s: a container other than the controller gets a ServiceAccount token", name)
		if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
			// The controller still needs its token, where client-go's in-cluster config reads
			// it, with the cluster's CA and the namespace: what the automount would give.
			v := mountedVolume(pod, *containerNamed(pod, "manager"), inClusterTokenDir)
			g.Expect(v).NotTo(BeNil(), "%s: the manager mounts no token at %s", name, inClusterTokenDir)
			g.Expect(v.Projected).NotTo(BeNil(), name)
			var files []string
			for _, s := range v.Projected.Sources {
				switch {
				case s.ServiceAccountToken != nil:
					g.Expect(s.ServiceAccountToken.Audience).To(BeEmpty(), "%s: a token for the API server", name)
					files = append(files, s.ServiceAccountToken.Path)
				case s.ConfigMap != nil:
					g.Expect(s.ConfigMap.Name).To(Equal("kube-root-ca.crt"), name)
					for _, item := range s.ConfigMap.Items {
						files = append(files, item.Key+"->"+item.Path)
					}
				case s.DownwardAPI != nil:
					for _, item := range s.DownwardAPI.Items {
						g.Expect(item.FieldRef).NotTo(BeNil(), name)
						files = append(files, item.FieldRef.FieldPath+"->"+item.Path)
					}
				}
			}
			g.Expect(files).To(ConsistOf("token", "ca.crt->ca.crt", "metadata.namespace->namespace"), name)
		}
	}

	// The check itself: a pod that lets the automount happen gives every container a token, and
	// so does mounting the manager's token volume.
	mg := deployments["manifest-generator"]
	g.Expect(mg).NotTo(BeNil())
	pod := mg.Spec.Template.Spec
	manager := containerNamed(pod, "manager")
	g.Expect(manager).NotTo(BeNil(), "the manifest-generator's controller container")
	var names []string
	for _, c := range pod.Containers {
		names = append(names, c.Name)
	}
	automount := pod.DeepCopy()
	automount.AutomountServiceAccountToken = nil
	g.Expect(tokenHolders(*automount)).To(ConsistOf(names))
	mounted := pod.DeepCopy()
	mounted.Containers = append(mounted.Containers, corev1.Container{Name: "other", VolumeMounts: []corev1.VolumeMount{
		{Name: mountedVolume(pod, *manager, inClusterTokenDir).Name, MountPath: "/token"}}})
	g.Expect(tokenHolders(*mounted)).To(ConsistOf("manager", "other"))
}

// componentOverlay writes the overlay of deploy/README.md that adds deploy/components/<component>
// to deploy/default, with relative paths (kustomize takes a kustomization only by one), in a
// directory under the repository's bin/ removed at the end of the test, and checks that the README
// shows it; it returns the overlay's directory.
func componentOverlay(t *testing.T, component string) string {
	t.Helper()
	g := NewWithT(t)
	g.Expect(os.MkdirAll(binDir, 0o755)).To(Succeed())
	overlay, err := os.MkdirTemp(binDir, "overlay-")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(overlay) })
	rel := func(p string) string {
		r, err := filepath.Rel(overlay, filepath.Join(env.Root, p))
		g.Expect(err).NotTo(HaveOccurred())
		return r
	}
	g.Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: sluice-system
resources:
  - %s
components:
  - %s
`, rel("deploy/default"), rel("deploy/components/"+component))), 0o644)).To(Succeed())
	readme, err := os.ReadFile(filepath.Join(env.Root, "deploy", "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	if component == runnerSidecar {
		// The README names it where it explains the runner; the component shows its overlay.
		g.Expect(string(readme)).To(ContainSubstring("`deploy/components/" + component + "`"))
		kustomization, err := os.ReadFile(filepath.Join(env.Root, "deploy", "components", component, "kustomization.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(kustomization)).To(MatchRegexp(`#\s+components:\n#\s+- [^\n]*deploy/components/` + regexp.QuoteMeta(component) + `\s`))
		return overlay
	}
	g.Expect(string(readme)).To(MatchRegexp(`components:\n\s+- \S*deploy/components/`+regexp.QuoteMeta(component)+`(\?|\s)`),
		"deploy/README.md shows the overlay of %s", component)
	return overlay
}

// compareObjects names (kind/namespace/name) the objects of after that differ from those of
// before, and those before does not have.
func compareObjects(before, after []*unstructured.Unstructured) (changed, added []string) {
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range before {
		byKey[key(o)] = o
	}
	for _, o := range after {
		b, ok := byKey[key(o)]
		switch {
		case !ok:
			added = append(added, key(o))
		case !reflect.DeepEqual(o.Object, b.Object):
			changed = append(changed, key(o))
		}
	}
	return changed, added
}

// The persistent-storage component, used as deploy/README.md says, adds a claim and mounts it at
// the source-controller's storage path; applied over a running deploy/default it switches /data
// to the claim, and applying deploy/default again switches it back.
func TestDeployPersistentStorageComponent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	defaults := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	applyObjects(t, defaults)

	objects := buildObjects(t, componentOverlay(t, "persistent-storage"))
	// The component adds one claim and changes nothing but the source-controller Deployment.
	changed, added := compareObjects(defaults, objects)
	g.Expect(changed).To(ConsistOf("Deployment/sluice-system/source-controller"))
	g.Expect(added).To(ConsistOf("PersistentVolumeClaim/sluice-system/source-controller-data"))
	g.Expect(objects).To(HaveLen(len(defaults) + 1))

	applyObjects(t, objects)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "source-controller-data"}, pvc)).To(Succeed())
	g.Expect(pvc.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))

	dataVolume := func() corev1.Volume {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "source-controller"}, d)).To(Succeed())
		c := d.Spec.Template.Spec.Containers[0]
		storage, _ := flagValue(c.Args, "--storage-path")
		for _, m := range c.VolumeMounts {
			if m.MountPath == storage {
				for _, v := range d.Spec.Template.Spec.Volumes {
					if v.Name == m.Name {
						return v
					}
				}
			}
		}
		t.Fatalf("no volume at the storage path %q", storage)
		return corev1.Volume{}
	}
	v := dataVolume()
	g.Expect(v.EmptyDir).To(BeNil())
	g.Expect(v.PersistentVolumeClaim).NotTo(BeNil())
	g.Expect(v.PersistentVolumeClaim.ClaimName).To(Equal(pvc.Name))
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: "source-controller"}, d)).To(Succeed())
	g.Expect(d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()).To(BeZero(), "a ReadWriteOnce claim is held by one pod at a time")

	applyObjects(t, defaults)
	v = dataVolume()
	g.Expect(v.PersistentVolumeClaim).To(BeNil())
	g.Expect(v.EmptyDir).NotTo(BeNil())
}

// podFromTemplate is a pod of sluice-system made from the template of d.
func podFromTemplate(d *appsv1.Deployment) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, GenerateName: d.Name + "-", Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
}

// warningRecorder keeps the warnings of the API server's responses.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// take returns the warnings kept so far and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

// A CRD generated into deploy/crds but missing from its kustomization would never be deployed.
func TestCRDKustomizationListsEveryGeneratedCRD(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(env.Root, "deploy", "crds")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var k struct {
		Resources []string `json:"resources"`
	}
	g.Expect(yaml.Unmarshal(raw, &k)).To(Succeed())

	generated, err := filepath.Glob(filepath.Join(dir, "*_*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generated).NotTo(BeEmpty())
	var names []string
	for _, f := range generated {
		names = append(names, filepath.Base(f))
	}
	g.Expect(k.Resources).To(ConsistOf(names))
}

// dockerStage is one FROM of a Dockerfile: its image and its instructions, continuation lines
// joined and ARG references replaced by their defaults.
type dockerStage struct {
	From         string
	Instructions []string
}

// readDockerfile parses the small Dockerfile subset the controllers use: comments, line
// continuations, ARG defaults (global and per stage) and ${NAME} references.
func readDockerfile(t *testing.T, path string) []dockerStage {
	t.Helper()
	f, err := os.Open(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var lines []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur += s + " "
			continue
		}
		lines = append(lines, strings.Join(strings.Fields(cur+l), " "))
		cur = ""
	}
	NewWithT(t).Expect(sc.Err()).NotTo(HaveOccurred())

	args := map[string]string{}
	ref := regexp.MustCompile(`\$\{(\w+)\}`)
	expand := func(s string) string {
		return ref.ReplaceAllStringFunc(s, func(m string) string {
			if v, ok := args[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	var stages []dockerStage
	for _, l := range lines {
		word, rest, _ := strings.Cut(l, " ")
		switch strings.ToUpper(word) {
		case "ARG":
			if k, v, ok := strings.Cut(rest, "="); ok {
				args[k] = expand(v)
			}
		case "FROM":
			stages = append(stages, dockerStage{From: expand(rest)})
		default:
			if len(stages) > 0 {
				stages[len(stages)-1].Instructions = append(stages[len(stages)-1].Instructions, expand(l))
			}
		}
	}
	return stages
}

// toolVersions reads the pinned versions of e2e/tools/versions.mk.
func toolVersions(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.Root, "e2e", "tools", "versions.mk"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	versions := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":="); ok && !strings.HasPrefix(l, "#") {
			versions[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return versions
}

// generatorImageDirs are the directories of the manifest-generator image holding kustomize and
// helm (copied from the build stage), git and sh: the Deployment's --generator-path must list them.
func generatorImageDirs(t *testing.T) []string {
	t.Helper()
	stages := readDockerfile(t, filepath.Join(env.Root, "manifest-generator", "Dockerfile"))
	final := stages[len(stages)-1]
	dirs := []string{"/usr/bin", "/bin"} // git (apk) and sh (busybox) in Alpine
	for _, in := range final.Instructions {
		if f := strings.Fields(in); f[0] == "COPY" && slices.Contains(f, "/out/kustomize") {
			dirs = append(dirs, strings.TrimSuffix(f[len(f)-1], "/"))
		}
	}
	return dirs
}

// Docker is not available here, so the images are not built; this checks what can be checked
// without it: each Dockerfile builds its own controller from the workspace with the brief's
// command, the files it copies are enough for Go to load that package (go list in a copy of the
// build context, from the module cache), the final image runs the binary as the Deployment's
// user, and the manifest-generator image carries kustomize and helm at the pinned versions, git
// and a shell, where --generator-path looks.
func TestDeployDockerfilesBuildEachController(t *testing.T) {
	versions := toolVersions(t)
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	for _, name := range harness.Controllers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			stages := readDockerfile(t, filepath.Join(env.Root, name, "Dockerfile"))
			g.Expect(len(stages)).To(BeNumerically(">=", 2), "a multi-stage build")
			build, final := stages[0], stages[len(stages)-1]
			g.Expect(build.From).To(MatchRegexp(`^golang:1\.26[.\d]* AS build$`))
			g.Expect(build.Instructions).To(ContainElement(MatchRegexp(`^ENV .*\bCGO_ENABLED=0\b`)))
			g.Expect(build.Instructions).To(ContainElement(MatchRegexp(`^RUN .*go build -trimpath -ldflags=-s -o /out/` + name + ` \./` + name + `$`)))

			// The build context the Dockerfile copies is enough to load the package.
			buildContext := t.TempDir()
			for _, in := range build.Instructions {
				f := strings.Fields(in)
				if f[0] != "COPY" || strings.HasPrefix(f[1], "--from") {
					continue
				}
				// Docker's COPY: a directory's contents go into the destination directory, a file
				// into it when it ends with a slash.
				dest := filepath.Join(buildContext, f[len(f)-1])
				for _, src := range f[1 : len(f)-1] {
					from, to := filepath.Join(env.Root, src), dest
					if info, err := os.Stat(from); err == nil && info.IsDir() {
						from += "/."
					} else if strings.HasSuffix(f[len(f)-1], "/") {
						to = filepath.Join(dest, filepath.Base(src))
					}
					g.Expect(os.MkdirAll(filepath.Dir(to), 0o755)).To(Succeed())
					out, err := exec.Command("cp", "-r", from, to).CombinedOutput()
					g.Expect(err).NotTo(HaveOccurred(), string(out))
				}
			}
			list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Name}}{{end}}", "./"+name)
			list.Dir = buildContext
			list.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly", "GOPROXY=off", "CGO_ENABLED=0")
			out, err := list.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), "go list in the Dockerfile's build context: %s", out)
			g.Expect(strings.Split(strings.TrimSpace(string(out)), "\n")).To(ContainElement("github.com/sluice-gitops/sluice/" + name + " main"))

			// The final image runs the binary as the Deployment's user.
			g.Expect(final.Instructions).To(ContainElement(MatchRegexp(`^COPY --from=build /out/` + name + ` /usr/local/bin/` + name + `$`)))
			g.Expect(final.Instructions).To(ContainElement(`ENTRYPOINT ["/usr/local/bin/` + name + `"]`))
			var d appsv1.Deployment
			for _, o := range objects {
				if o.GetKind() == "Deployment" && o.GetName() == name {
					g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d)).To(Succeed())
				}
			}
			manager := containerNamed(d.Spec.Template.Spec, "manager")
			g.Expect(manager).NotTo(BeNil())
			sc := manager.SecurityContext
			g.Expect(final.Instructions).To(ContainElement(fmt.Sprintf("USER %d:%d", *sc.RunAsUser, *sc.RunAsGroup)))

			if name != "manifest-generator" {
				g.Expect(final.From).To(MatchRegexp(`^gcr\.io/distroless/static(-debian\d+)?:nonroot$`))
				return
			}
			g.Expect(build.Instructions).To(ContainElement(MatchRegexp(`^RUN .*go install .*sigs\.k8s\.io/kustomize/kustomize/v5@` + regexp.QuoteMeta(versions["KUSTOMIZE_VERSION"]) + `( |$)`)))
			// Helm 4 renders for the minor of the k8s.io/client-go it is linked with: built with
			// GOWORK=off from its own go.mod, as make tools builds bin/helm, that is the minor of
			// Helm's go.mod.
			g.Expect(build.Instructions).To(ContainElement(MatchRegexp(`^RUN .*GOWORK=off GOBIN=/out go install [^&]*helm\.sh/helm/v4/cmd/helm@` + regexp.QuoteMeta(versions["HELM_VERSION"]) + `( |$)`)))
			g.Expect(build.Instructions).To(ContainElement(ContainSubstring("-X helm.sh/helm/v4/internal/version.version=" + versions["HELM_VERSION"])))
			g.Expect(helmClientGoMinor(t, versions["HELM_VERSION"])).To(Equal(versions["HELM_KUBE_MINOR"]),
				"the image's helm renders for the Kubernetes version bin/helm renders for in the tests")
			g.Expect(final.From).To(MatchRegexp(`^alpine:3\.\d+$`), "an image with a POSIX shell at /bin/sh")
			g.Expect(final.Instructions).To(ContainElement(MatchRegexp(`^RUN apk add --no-cache( \S+)* git( |$)`)))
			g.Expect(final.Instructions).To(ContainElement(MatchRegexp(`^COPY --from=build /out/kustomize /out/helm /usr/local/bin/$`)))
		})
	}
}

// servicePort is the port of the Service's port named name; 0 when it has none.
func servicePort(svc *corev1.Service, name string) int32 {
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return p.Port
		}
	}
	return 0
}
