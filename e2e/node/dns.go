package node

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
)

// CoreDNSImage is the image of the cluster's DNS, built by Start from bin/coredns (`make
// node-tools`) and internal/apirelay.
const CoreDNSImage = "sluice.local/coredns:dev"

// DefaultDNSServiceIP is the cluster DNS service's address when Options.DNSServiceIP is empty:
// kubeadm's, in the control plane's Service range (testenv.ServiceCIDR, 10.96.0.0/12).
const DefaultDNSServiceIP = "10.96.0.10"

// corefile serves the cluster's names only: no forward plugin, since a node's pods reach nothing
// beyond the host. It listens on an unprivileged port (the Service maps 53 to it), so CoreDNS
// runs as a user without capabilities.
const corefile = `.:1053 {
    errors
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig /etc/coredns/kubeconfig
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`

// relayPort is where a CoreDNS pod's apirelay accepts the API server's connections.
const relayPort = "6443"

// coreDNSArchive writes the CoreDNS image: CoreDNS and the relay to the API server, run as
// nonroot.
func coreDNSArchive(binDir, e2eDir, stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "coredns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	relay := filepath.Join(dir, "apirelay")
	if err := buildStatic(e2eDir, "./node/internal/apirelay", relay); err != nil {
		return "", err
	}
	archive := filepath.Join(dir, "coredns.tar")
	return archive, writeImage(archive, CoreDNSImage, "65532:65532", []string{"/coredns"},
		map[string]string{"coredns": filepath.Join(binDir, "coredns"), "apirelay": relay})
}

// deployDNS runs CoreDNS as a Deployment in kube-system behind the Service kube-dns at
// serviceIP, and waits until it is Ready. CoreDNS reaches the API server through the relay:
// apirelay in its pod on 127.0.0.1:6443, the node's socket in the hostPath socketDir, then the
// API server. Its kubeconfig is the administrator's, pointed at the relay (the API server's
// certificate is valid for 127.0.0.1).
func (n *Node) deployDNS(ctx context.Context, serviceIP, socketDir string) error {
	kubeconfig, err := clientcmd.LoadFromFile(n.opts.Kubeconfig)
	if err != nil {
		return err
	}
	for _, c := range kubeconfig.Clusters {
		c.Server = "https://127.0.0.1:" + relayPort
	}
	kubeconfigData, err := clientcmd.Write(*kubeconfig)
	if err != nil {
		return err
	}
	const ns = "kube-system"
	one, directory := int32(1), corev1.HostPathDirectory
	labels := map[string]string{"k8s-app": "kube-dns"}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns},
		Data:       map[string][]byte{"kubeconfig": kubeconfigData},
		StringData: map[string]string{"Corefile": corefile},
	}
	if _, err := n.Client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Its own names come from the host's resolver, not from itself.
					DNSPolicy: corev1.DNSDefault,
					Containers: []corev1.Container{{
						Name:  "coredns",
						Image: CoreDNSImage,
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 1053, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 1053, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					}, {
						Name:         "apirelay",
						Image:        CoreDNSImage,
						Command:      []string{"/apirelay", "-listen", "127.0.0.1:" + relayPort, "-socket", "/run/apiserver/apiserver.sock"},
						VolumeMounts: []corev1.VolumeMount{{Name: "apiserver", MountPath: "/run/apiserver"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "coredns"}}},
						{Name: "apiserver", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: socketDir, Type: &directory,
						}}},
					},
				},
			},
		},
	}
	if _, err := n.Client.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		return err
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: serviceIP,
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns-tcp")},
			},
		},
	}
	if _, err := n.Client.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		d, err := n.Client.AppsV1().Deployments(ns).Get(ctx, "coredns", metav1.GetOptions{})
		if err == nil && d.Status.ReadyReplicas == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			pods, _ := n.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
			var states []string
			if pods != nil {
				for _, p := range pods.Items {
					states = append(states, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, p.Status.ContainerStatuses))
				}
			}
			return fmt.Errorf("CoreDNS not ready: %w; pods: %v", ctx.Err(), states)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// apiServerAddress is host:port of the kubeconfig's API server.
func apiServerAddress(kubeconfig string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}
