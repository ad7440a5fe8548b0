package sessionpod

import (
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Labels of the session pods: SessionLabel selects them all (the sweep, a NetworkPolicy),
// the others say whose session a pod is.
const (
	SessionLabel   = "generator.toolkit.fluxcd.io/session"
	OwnerKindLabel = "generator.toolkit.fluxcd.io/owner-kind"
	OwnerNameLabel = "generator.toolkit.fluxcd.io/owner-name"
	// ReplicaLabel names the controller's replica that started the pod (its pod's name).
	ReplicaLabel = "generator.toolkit.fluxcd.io/replica"
	// ContainerName is the session's container, where the session process runs.
	ContainerName = "session"
	// workdir is where the session's files are: the pod's memory-backed emptyDir.
	workdir = "/work"
)

// The users of the session pods: one drawn at random per pod, above the users of images, hosts
// and local runners (runner.LocalUserSpace), so that no two sessions are likely to share one
// (RLIMIT_NPROC counts a user's processes over the whole node).
const (
	firstUser = 2_100_000_000
	lastUser  = 1<<31 - 2
)

// podFor is the pod of a session of owner, that must end by deadline.
func (o *Options) podFor(image string, owner runner.Owner, deadline time.Time) *corev1.Pod {
	uid := firstUser + rand.Int64N(lastUser-firstUser+1)
	active := int64(time.Until(deadline).Round(time.Second)/time.Second) + 1
	memory := o.Memory.DeepCopy()
	memory.Add(o.Disk)
	disk := o.Disk.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podPrefix(owner) + suffix(),
			Namespace: owner.Namespace,
			Labels: map[string]string{
				SessionLabel: "true", OwnerKindLabel: owner.Kind, OwnerNameLabel: labelValue(owner.Name),
				"app.kubernetes.io/managed-by": "manifest-generator",
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &active,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			// Nothing of the cluster: no token, no Service variables.
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: &uid, RunAsGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				// The pod's own process waits; the session process is an exec beside it, whose
				// output goes to the controller alone, not into the node's container logs.
				Args: runner.PauseArgs(),
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{
						corev1.ResourceCPU: o.CPU, corev1.ResourceMemory: memory,
						// The root filesystem is read-only: what is left is the container's log.
						corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"),
					},
					Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
						corev1.ResourceEphemeralStorage: resource.MustParse("16Mi"),
					},
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "work", MountPath: workdir}},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			// In memory: the kernel stops writes at the size (files deleted while open and
			// directories nobody may read count too), and nothing is left on the node's disk.
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &disk},
			}}},
		},
	}
	if owner.UID != "" {
		// Deleted with the object if the controller dies before deleting it.
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: types.UID(owner.UID)}}
	}
	return pod
}

// sessionCommand is the command of the session process, an exec in the pod: the controller's
// binary (the pod's own process, /proc/1/exe) serving one session on its standard input and
// output, under the runner's limits with the pod's disk.
func (o *Options) sessionCommand() []string {
	limits := o.Limits
	limits.MaxDisk = o.Disk.Value()
	return append([]string{"/proc/1/exe"}, runner.SessionArgs(workdir, limits)...)
}

// podPrefix is the start of a session pod's name: the owner's name, cut to leave room, and
// what the session does.
func podPrefix(owner runner.Owner) string {
	name := owner.Name
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-.")
	}
	kind := "session"
	switch owner.Kind {
	case "ManifestGeneration":
		kind = "generate"
	case "ManifestUpdate":
		kind = "update"
	}
	return name + "-" + kind + "-"
}

// suffix is the random end of a pod's name, as generateName would make it.
func suffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// labelValue cuts a name to a label value's 63 characters.
func labelValue(s string) string {
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-._")
	}
	return s
}
