// Package leaderpod labels the pod of the elected source-controller replica, so that a Service
// selecting the label sends artifact downloads to the leader only: the leader is the replica
// that reconciles, so its storage is the one that holds the artifacts and its key the one that
// signed their URLs (--leader-pod-label, source-controller/docs/storage.md).
//
// controller-runtime elects the leader (manager.LeaderElectionRunnable) but has nothing that marks
// the leader's pod; this package adds two runnables to the manager:
//   - at start, on every replica and before the election is decided, the label is removed from
//     the replica's own pod, should a former leader be restarting (after a lost lease or a kill,
//     it had no chance to remove it);
//   - once elected, the label is set on the pod (a JSON merge patch of metadata.labels, retried
//     with backoff until it succeeds or the manager stops), and removed again when the manager
//     stops, before the lease is released (best effort, within StopTimeout).
package leaderpod

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The pod's RBAC: read and patch the pods of the controller's own namespace only (a Role in
// sluice-system, bound by deploy/source-controller/account.yaml).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;patch,namespace=sluice-system

const (
	// Value is the value of the label on the leader's pod.
	Value = "leader"
	// PodNameEnv names the pod the controller runs in (set from the downward API, metadata.name).
	PodNameEnv = "POD_NAME"
	// PodNamespaceEnv names its namespace (metadata.namespace), as for the leader-election lease
	// (shared/bootstrap.RuntimeNamespaceEnv).
	PodNamespaceEnv = "RUNTIME_NAMESPACE"
	// DefaultStopTimeout bounds the removal of the label when the manager stops.
	DefaultStopTimeout = 5 * time.Second
)

// DefaultBackoff is how writes are retried: from 200ms, doubling, up to every 30s.
var DefaultBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 30 * time.Second}

// Labeler sets Key=Value on the pod Namespace/Name while its manager is the elected leader.
type Labeler struct {
	// Client patches the pod (writes go to the API server; no pod is cached).
	Client client.Client
	// Reader reads the pod from the API server (a manager's APIReader), so that no informer on
	// pods, with its list and watch rights, is needed.
	Reader client.Reader
	// Namespace and Name are the pod's.
	Namespace, Name string
	// Key is the label.
	Key string
	// StopTimeout bounds the removal at stop; DefaultStopTimeout when zero.
	StopTimeout time.Duration
	// Backoff paces retries; DefaultBackoff when zero.
	Backoff wait.Backoff

	log logr.Logger
	// cleared is closed once the label left the pod at start: only then may the elected
	// runnable set it, or the removal could undo it.
	cleared   chan struct{}
	clearOnce sync.Once
}

// New returns a Labeler of key for the pod named by POD_NAME and RUNTIME_NAMESPACE, with the
// manager's client and API reader. It fails when key is not a label key or when either variable
// is missing.
func New(mgr manager.Manager, key string) (*Labeler, error) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, fmt.Errorf("%q is not a label key: %s", key, strings.Join(errs, "; "))
	}
	name, namespace := os.Getenv(PodNameEnv), os.Getenv(PodNamespaceEnv)
	var missing []string
	if name == "" {
		missing = append(missing, PodNameEnv+" (metadata.name)")
	}
	if namespace == "" {
		missing = append(missing, PodNamespaceEnv+" (metadata.namespace)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("labelling the leader's pod needs the pod's name and namespace: set %s from the downward API",
			strings.Join(missing, " and "))
	}
	return &Labeler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: namespace, Name: name, Key: key}, nil
}

// SetupWithManager adds the labeler's two runnables to mgr: the removal at start, on every
// replica, and the label of the elected one.
func (l *Labeler) SetupWithManager(mgr manager.Manager) error {
	if err := mgr.Add(l.Unlabeler()); err != nil {
		return err
	}
	return mgr.Add(l)
}

func (l *Labeler) init() {
	if l.cleared == nil {
		l.cleared = make(chan struct{})
		l.log = ctrl.Log.WithName("leader-pod").WithValues("pod", l.Namespace+"/"+l.Name, "label", l.Key)
	}
}

// unlabeler is the runnable that removes the label at start.
type unlabeler struct{ l *Labeler }

// Unlabeler returns the runnable that removes the label from the pod at start, whether or not
// this replica is elected (NeedLeaderElection false). It ends once the pod has no label; it fails,
// which stops the manager, when the pod cannot be found or read or patched for want of rights
// (POD_NAME, RUNTIME_NAMESPACE or the RBAC are wrong); other errors are retried.
func (l *Labeler) Unlabeler() manager.Runnable {
	l.init()
	return unlabeler{l}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (unlabeler) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (u unlabeler) Start(ctx context.Context) error {
	l := u.l
	err := l.backoff().DelayFunc().Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		err := l.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: l.Name}, pod)
		if err == nil {
			if _, ok := pod.Labels[l.Key]; !ok {
				return true, nil
			}
			if err = l.patch(ctx, nil); err == nil {
				l.log.Info("removed the label of a former leader from the pod")
				return true, nil
			}
		}
		if permanent(err) {
			return false, fmt.Errorf("removing label %s from pod %s/%s (%s, %s): %w", l.Key, l.Namespace, l.Name, PodNamespaceEnv, PodNameEnv, err)
		}
		l.log.Error(err, "removing the label from the pod, retrying")
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		return err
	}
	l.clearOnce.Do(func() { close(l.cleared) })
	return nil
}

// permanent reports whether err is one that retrying does not mend.
func permanent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the label marks the leader.
func (*Labeler) NeedLeaderElection() bool { return true }

// Start sets the label once the removal at start is done, retrying with backoff until it is set
// or ctx ends; then, when ctx ends, it removes the label (best effort, within StopTimeout). The
// manager stops its leader runnables before it releases the lease, so the label is gone before
// another replica can be elected.
func (l *Labeler) Start(ctx context.Context) error {
	l.init()
	select {
	case <-l.cleared:
	case <-ctx.Done():
		return nil
	}
	_ = l.backoff().DelayFunc().Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		value := Value
		if err := l.patch(ctx, &value); err != nil {
			l.log.Error(err, "labelling the pod as the leader's, retrying")
			return false, nil
		}
		l.log.Info("labelled the pod as the leader's: it serves the artifacts")
		return true, nil
	})
	<-ctx.Done()

	timeout := l.StopTimeout
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := l.backoff().DelayFunc().Until(stopCtx, true, false, func(ctx context.Context) (bool, error) {
		err := l.patch(ctx, nil)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return true, nil
		case permanent(err):
			return false, err
		}
		return false, nil
	})
	if err != nil {
		l.log.Error(err, "removing the label from the pod at stop")
	} else {
		l.log.Info("removed the label from the pod")
	}
	return nil
}

// patch sets the label to *value, or removes it when value is nil: a JSON merge patch of
// metadata.labels only (null deletes a key, and deleting a missing key is no error).
func (l *Labeler) patch(ctx context.Context, value *string) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{l.Key: value}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name}}
	return l.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, data))
}

func (l *Labeler) backoff() wait.Backoff {
	if l.Backoff == (wait.Backoff{}) {
		return DefaultBackoff
	}
	return l.Backoff
}
