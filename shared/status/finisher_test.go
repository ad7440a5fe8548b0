package status_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/status"
)

const testFinalizer = "testing.sluice.dev/finalizer"

// reconcileConsumer is the shape of every reconciler on the Consumer kind: read, Begin, Finish
// deferred, Preamble, then the steps. cleanups counts the Cleanup calls of a deleted consumer.
func reconcileConsumer(ctx context.Context, key client.ObjectKey, p status.Preamble, cleanupErr error, cleanups *int,
	steps func(obj *testapi.Consumer) error) (retErr error) {
	obj := &testapi.Consumer{}
	if err := env.Client.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	p.Suspended = obj.Spec.Suspend
	p.Cleanup = func() error { *cleanups++; return cleanupErr }
	rec := status.Finisher{Client: env.Client, FieldOwner: "status-test"}.Begin(ctx, obj, status.Fields{
		ObservedGeneration: &obj.Status.ObservedGeneration, LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
	})
	defer rec.Finish(&retErr)
	if done, err := rec.Preamble(p); done {
		return err
	}
	return steps(obj)
}

// conditionOf is "status|reason|message" of a condition, "" when absent.
func conditionOf(obj conditions.Getter, t string) string {
	if c := conditions.Get(obj, t); c != nil {
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
	return ""
}

// The start and the finish every reconciler shares, on the Consumer kind: what the status says
// after one reconcile, and what the reconcile returns.
func TestFinisher(t *testing.T) {
	ready := func(obj *testapi.Consumer) error {
		conditions.MarkTrue(obj, meta.ReadyCondition, meta.SucceededReason, "done")
		return nil
	}
	type outcome struct {
		err                         string // "" for none
		ready, reconciling, stalled string
		observed                    bool // observedGeneration is the generation
		finalizer                   bool
		lastHandled                 string
		gone                        bool
		cleanups                    int
		reconcilingDuringSteps      string
	}
	for _, tc := range []struct {
		name string
		obj  testapi.Consumer
		// noFinalizer: a kind that leaves nothing behind (Gate, ResourceSetInputProvider).
		noFinalizer bool
		// status, when set, is written into the created object's status.
		status     func(obj *testapi.Consumer)
		delete     bool
		cleanupErr error
		steps      func(obj *testapi.Consumer) error
		want       outcome
	}{{
		name: "success", steps: ready,
		want: outcome{ready: "True|Succeeded|done", observed: true, finalizer: true,
			reconcilingDuringSteps: "True|Progressing|Reconciliation in progress"},
	}, {
		name:  "transient error: retried, the generation is not observed",
		steps: func(*testapi.Consumer) error { return errors.New("connection refused") },
		want: outcome{err: "connection refused", ready: "False|ReconciliationFailed|connection refused",
			reconciling: "True|ProgressingWithRetry|connection refused", finalizer: true,
			reconcilingDuringSteps: "True|Progressing|Reconciliation in progress"},
	}, {
		name: "terminal error: stalled with Ready's reason, the generation observed",
		steps: func(obj *testapi.Consumer) error {
			conditions.MarkFalse(obj, meta.ReadyCondition, "InvalidSpec", "bad spec")
			return reconcile.TerminalError(errors.New("bad spec"))
		},
		want: outcome{err: "terminal error: bad spec", ready: "False|InvalidSpec|bad spec", stalled: "True|InvalidSpec|bad spec",
			observed: true, finalizer: true, reconcilingDuringSteps: "True|Progressing|Reconciliation in progress"},
	}, {
		name:  "an observed generation is not Reconciling",
		obj:   testapi.Consumer{Status: testapi.ConsumerStatus{ObservedGeneration: 1}},
		steps: ready,
		want:  outcome{ready: "True|Succeeded|done", observed: true, finalizer: true},
	}, {
		name: "suspended: the request echoed, the finalizer added, nothing tried",
		obj: testapi.Consumer{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{meta.ReconcileRequestAnnotation: "now"}},
			Spec:       testapi.ConsumerSpec{Suspend: true},
		},
		steps: func(*testapi.Consumer) error { panic("a suspended object runs no step") },
		want:  outcome{observed: true, finalizer: true, lastHandled: "now"},
	}, {
		name:        "a kind without finalizer gets none",
		noFinalizer: true,
		obj:         testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{meta.ReconcileRequestAnnotation: "now"}}},
		steps:       ready,
		want: outcome{ready: "True|Succeeded|done", observed: true, lastHandled: "now",
			reconcilingDuringSteps: "True|Progressing|Reconciliation in progress"},
	}, {
		name:   "deleted while finishing: cleaned up, the finalizer removed, the status patch of a gone object is no error",
		obj:    testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{testFinalizer}}},
		delete: true,
		steps:  func(*testapi.Consumer) error { panic("a deleted object runs no step") },
		want:   outcome{gone: true, cleanups: 1},
	}, {
		name:       "a failed cleanup keeps the finalizer and is retried",
		obj:        testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{testFinalizer}}},
		delete:     true,
		cleanupErr: errors.New("storage unavailable"),
		steps:      func(*testapi.Consumer) error { panic("a deleted object runs no step") },
		want:       outcome{err: "storage unavailable", finalizer: true, cleanups: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "finisher-"}}
			g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
			obj := tc.obj.DeepCopy()
			obj.Namespace, obj.Name = ns.Name, "app"
			st := obj.Status
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
			if st.ObservedGeneration != 0 || tc.status != nil {
				obj.Status = st
				if tc.status != nil {
					tc.status(obj)
				}
				g.Expect(env.Client.Status().Update(ctx, obj)).To(Succeed())
			}
			key := client.ObjectKeyFromObject(obj)
			if tc.delete {
				g.Expect(env.Client.Delete(ctx, obj)).To(Succeed())
			}
			preamble := status.Preamble{Finalizer: testFinalizer}
			if tc.noFinalizer {
				preamble.Finalizer = ""
			}

			var duringSteps string
			cleanups := 0
			err := reconcileConsumer(ctx, key, preamble, tc.cleanupErr, &cleanups, func(o *testapi.Consumer) error {
				// What a watcher sees while the steps run.
				seen := &testapi.Consumer{}
				g.Expect(env.Client.Get(ctx, key, seen)).To(Succeed())
				duringSteps = conditionOf(seen, meta.ReconcilingCondition)
				return tc.steps(o)
			})
			if tc.want.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(tc.want.err))
			}
			g.Expect(cleanups).To(Equal(tc.want.cleanups))
			g.Expect(duringSteps).To(Equal(tc.want.reconcilingDuringSteps))

			got := &testapi.Consumer{}
			if err := env.Client.Get(ctx, key, got); tc.want.gone {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
				return
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(conditionOf(got, meta.ReadyCondition)).To(Equal(tc.want.ready))
			g.Expect(conditionOf(got, meta.ReconcilingCondition)).To(Equal(tc.want.reconciling))
			g.Expect(conditionOf(got, meta.StalledCondition)).To(Equal(tc.want.stalled))
			g.Expect(got.Status.ObservedGeneration == got.Generation).To(Equal(tc.want.observed), "observedGeneration")
			g.Expect(got.Finalizers).To(Or(BeEmpty(), Equal([]string{testFinalizer})))
			g.Expect(len(got.Finalizers) == 1).To(Equal(tc.want.finalizer), "finalizer")
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal(tc.want.lastHandled))
		})
	}
}
