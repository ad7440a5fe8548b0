package sessionpod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Dialer starts each session in a pod of its own: a runner.Dialer.
type Dialer struct {
	// Config and Client are the controller's: it creates, execs in and deletes the pods.
	Config *rest.Config
	Client kubernetes.Interface
	// Image is the pods' image (Options.Image, or the controller's own).
	Image   string
	Options Options
	// Replica is the controller's replica (its pod's name), which labels the pods it starts.
	Replica string
	// Members, with shards, lists the live replicas and whether they agree: Sweep leaves their
	// pods alone, and sweeps again every SweepPeriod, since no leader is left to sweep behind a
	// replica that dies.
	Members func() ([]string, bool)

	// live are the pods this Dialer started and has not deleted ("namespace/name"): Sweep
	// leaves them alone.
	live sync.Map
}

var _ runner.Dialer = (*Dialer)(nil)

// New returns a Dialer with the controller's config. Without opts.Image, the image is that of
// the controller's own container, read from its Pod (POD_NAME in RUNTIME_NAMESPACE).
func New(ctx context.Context, config *rest.Config, opts Options, podName, podNamespace, container string) (*Dialer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	d := &Dialer{Config: config, Client: client, Image: opts.Image, Options: opts, Replica: podName}
	if d.Image == "" {
		if podName == "" || podNamespace == "" {
			return nil, fmt.Errorf("--%s is empty and the controller's own Pod is unknown (POD_NAME, RUNTIME_NAMESPACE): set --%s", flagImage, flagImage)
		}
		pod, err := client.CoreV1().Pods(podNamespace).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading the controller's own Pod for its image (or set --%s): %w", flagImage, err)
		}
		for _, c := range pod.Spec.Containers {
			if c.Name == container {
				d.Image = c.Image
			}
		}
		if d.Image == "" {
			return nil, fmt.Errorf("the controller's Pod %s/%s has no container %q: set --%s", podNamespace, podName, container, flagImage)
		}
	}
	return d, nil
}

// Dial creates the pod of a session for opts.Owner, waits until its container runs, and starts
// the session process in it (an exec). Any failure deletes the pod.
func (d *Dialer) Dial(ctx context.Context, opts runner.Options) (io.ReadWriteCloser, error) {
	owner := opts.Owner
	if owner.Namespace == "" || owner.Name == "" {
		return nil, errors.New("a session pod needs the object it works for")
	}
	deadline := time.Now().Add(d.Options.MaxDuration)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	pods := d.Client.CoreV1().Pods(owner.Namespace)
	pod := d.Options.podFor(d.Image, owner, deadline)
	if d.Replica != "" {
		pod.Labels[ReplicaLabel] = labelValue(d.Replica)
	}
	// Named here, not by generateName: the pod is known as live before it exists.
	key := pod.Namespace + "/" + pod.Name
	d.live.Store(key, true)
	pod, err := pods.Create(ctx, pod, metav1.CreateOptions{FieldManager: "manifest-generator"})
	if err != nil {
		d.live.Delete(key)
		return nil, fmt.Errorf("creating the session pod in namespace %s: %w", owner.Namespace, err)
	}
	c := &conn{pods: pods, namespace: pod.Namespace, name: pod.Name, deleted: func() { d.live.Delete(key) }}
	if err := d.waitRunning(ctx, pod); err != nil {
		c.delete()
		return nil, err
	}
	if err := c.exec(d.Config, d.Client.CoreV1().RESTClient(), d.Options.sessionCommand()); err != nil {
		c.delete()
		return nil, err
	}
	return c, nil
}

// waitRunning watches the pod until its container runs, fails, or the start timeout passes.
func (d *Dialer) waitRunning(parent context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(parent, d.Options.StartTimeout)
	defer cancel()
	pods := d.Client.CoreV1().Pods(pod.Namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return fmt.Errorf("watching the session pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer w.Stop()
	last := pod
	for {
		select {
		case <-ctx.Done():
			if parent.Err() == nil {
				return fmt.Errorf("the session pod %s/%s did not run within %v (--%s): %s", pod.Namespace, pod.Name, d.Options.StartTimeout, flagStartTimeout, pending(last))
			}
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The watch ended early (the API server's timeout): read the pod once more.
				p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("reading the session pod %s/%s: %w", pod.Namespace, pod.Name, err)
				}
				if done, err := started(p); done || err != nil {
					return err
				}
				if w, err = pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: p.ResourceVersion}); err != nil {
					return fmt.Errorf("watching the session pod %s/%s: %w", pod.Namespace, pod.Name, err)
				}
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				return fmt.Errorf("the session pod %s/%s was deleted before it ran", pod.Namespace, pod.Name)
			case watch.Error:
				return fmt.Errorf("watching the session pod %s/%s: %v", pod.Namespace, pod.Name, apierrors.FromObject(ev.Object))
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = p
			if done, err := started(p); done || err != nil {
				return err
			}
		}
	}
}

// started reports whether the pod's session container runs, or an error when it never will.
func started(p *corev1.Pod) (bool, error) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("the session pod %s/%s ended before its session started: %s", p.Namespace, p.Name, ended(p))
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		if cs.State.Running != nil {
			return true, nil
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return false, fmt.Errorf("the session pod %s/%s cannot start: %s: %s", p.Namespace, p.Name, w.Reason, w.Message)
			}
		}
		if cs.State.Terminated != nil {
			return false, fmt.Errorf("the session pod %s/%s ended before its session started: %s", p.Namespace, p.Name, ended(p))
		}
	}
	return false, nil
}

// pending says why a pod does not run yet: its unschedulable condition or its container's wait.
func pending(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("not scheduled: %s", c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return fmt.Sprintf("%s %s", w.Reason, w.Message)
		}
	}
	return "phase " + string(p.Status.Phase)
}

// ended says how a session pod ended: its container's reason and exit code (OOMKilled, 137),
// or the pod's reason (DeadlineExceeded).
func ended(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && cs.Name == ContainerName {
			s := fmt.Sprintf("its container ended with exit code %d (%s)", t.ExitCode, t.Reason)
			if t.Reason == "OOMKilled" {
				s += ": it passed its memory limit (--session-memory)"
			}
			if t.Message != "" {
				s += ": " + t.Message
			}
			return s
		}
	}
	if p.Status.Reason != "" {
		if p.Status.Reason == "DeadlineExceeded" {
			return fmt.Sprintf("%s: %s (the session's deadline, at most --%s)", p.Status.Reason, p.Status.Message, flagMaxDuration)
		}
		return fmt.Sprintf("%s: %s", p.Status.Reason, p.Status.Message)
	}
	return "phase " + string(p.Status.Phase)
}

// execExecutor is kubectl exec's: WebSocket first, SPDY when the server cannot upgrade.
func execExecutor(config *rest.Config, restClient rest.Interface, ns, name string, command []string) (remotecommand.Executor, error) {
	req := restClient.Post().Resource("pods").Namespace(ns).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: ContainerName, Command: command, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(config, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(config, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// deleteNow deletes a session pod without a grace period: nothing of the session is worth
// waiting for.
func deleteNow(ctx context.Context, pods podDeleter, name string) error {
	err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

type podDeleter interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}
