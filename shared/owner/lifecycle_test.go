package owner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/apply"
	"github.com/sluice-gitops/sluice/shared/gates/gatestest"
	"github.com/sluice-gitops/sluice/shared/gatesapi"
	"github.com/sluice-gitops/sluice/shared/impersonation"
	"github.com/sluice-gitops/sluice/shared/internal/testapi"
	"github.com/sluice-gitops/sluice/shared/owner"
)

const (
	finalizer = "testing.sluice.dev/finalizer"
	// serviceAccountAnnotation is the test kind's spec.serviceAccountName.
	serviceAccountAnnotation = "testing.sluice.dev/service-account"
	// planErrAnnotation makes the test kind's own steps fail: "terminal" or any other message.
	planErrAnnotation = "testing.sluice.dev/plan-error"
	// objectsAnnotation names the ConfigMaps the test kind applies, comma-separated ("app" when
	// unset).
	objectsAnnotation = "testing.sluice.dev/objects"
)

// consumers is the Kind of the lifecycle tests: a Consumer applies one ConfigMap, `app`, whose
// data holds spec.revision.
type consumers struct{}

func (consumers) Fields(obj *testapi.Consumer) owner.Fields {
	return owner.StatusFields[testapi.ConsumerInventory, testapi.ConsumerRef](
		&obj.Status.ObservedGeneration, &obj.Status.LastAppliedRevision, &obj.Status.Inventory)
}

func (consumers) Settings(obj *testapi.Consumer) owner.Settings {
	return owner.Settings{
		Suspended: obj.Spec.Suspend, SuspendedMessage: "suspended", Interval: time.Hour,
		Deadline: 30 * time.Second, Timeout: 30 * time.Second,
		ServiceAccount: obj.GetAnnotations()[serviceAccountAnnotation], Prune: true,
	}
}

func (consumers) Plan(_ context.Context, obj *testapi.Consumer) (owner.Plan, error) {
	switch msg := obj.GetAnnotations()[planErrAnnotation]; msg {
	case "":
	case "terminal":
		conditions.MarkFalse(obj, meta.ReadyCondition, "InvalidSpec", "the spec cannot be rendered")
		return owner.Plan{}, reconcile.TerminalError(errors.New("the spec cannot be rendered"))
	default:
		return owner.Plan{}, errors.New(msg)
	}
	rev := obj.Spec.Revision
	names := "app"
	if v, ok := obj.GetAnnotations()[objectsAnnotation]; ok {
		names = v
		rev += "+" + v
	}
	return owner.Plan{Revision: rev, Build: func(context.Context) ([]*unstructured.Unstructured, error) {
		var objects []*unstructured.Unstructured
		for _, name := range strings.Split(names, ",") {
			cm := &unstructured.Unstructured{}
			cm.SetAPIVersion("v1")
			cm.SetKind("ConfigMap")
			cm.SetNamespace(obj.Namespace)
			cm.SetName(name)
			_ = unstructured.SetNestedStringMap(cm.Object, map[string]string{"revision": obj.Spec.Revision}, "data")
			objects = append(objects, cm)
		}
		return objects, nil
	}}, nil
}

func (consumers) Succeeded(_ *testapi.Consumer, revision string, _ time.Duration) (string, string) {
	return "Applied revision: " + revision, "applied " + revision
}

// world is one test's namespace, consumer and lifecycle (a controller process: a new one
// remembers nothing).
type world struct {
	t      *testing.T
	g      *WithT
	ns     string
	key    client.ObjectKey
	events *record.FakeRecorder
	l      *owner.Lifecycle[*testapi.Consumer]
	err    error
	result ctrl.Result
}

var nsCount atomic.Int64

func newWorld(t *testing.T) *world {
	g := NewWithT(t)
	ns := fmt.Sprintf("owner-%d", nsCount.Add(1))
	g.Expect(env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	w := &world{t: t, g: g, ns: ns, key: client.ObjectKey{Namespace: ns, Name: "owner"}}
	w.restart()
	obj := &testapi.Consumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"},
		Spec: testapi.ConsumerSpec{Revision: "r1", Gates: &gatesapi.Gates{Refs: []string{"freeze"}}}}
	gatestest.SetOpened(t, env.Client, ns, "freeze", true)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return w
}

// restart is a new controller process: nothing applied is remembered.
func (w *world) restart() {
	w.events = record.NewFakeRecorder(100)
	w.l = &owner.Lifecycle[*testapi.Consumer]{
		Kind: consumers{}, Client: env.Client, APIReader: env.Client, EventRecorder: w.events,
		Clients:        &impersonation.Clients{Config: env.Config, Scheme: env.Client.Scheme(), Mapper: env.Client.RESTMapper()},
		ControllerName: "owner-test", Finalizer: finalizer, OwnerGroup: "testing.sluice.dev",
		Annotations: apply.Annotations{Reconcile: "testing.sluice.dev/reconcile", Force: "testing.sluice.dev/force", Prune: "testing.sluice.dev/prune"},
		Concurrency: 2,
	}
}

func (w *world) reconcile() {
	w.result, w.err = w.l.ReconcileRequest(context.Background(), ctrl.Request{NamespacedName: w.key}, &testapi.Consumer{})
}

// update changes the consumer as a user would.
func (w *world) update(change func(obj *testapi.Consumer)) {
	obj := w.consumer()
	change(obj)
	w.g.Expect(env.Client.Update(context.Background(), obj)).To(Succeed())
}

func (w *world) consumer() *testapi.Consumer {
	obj := &testapi.Consumer{}
	w.g.Expect(env.Client.Get(context.Background(), w.key, obj)).To(Succeed())
	return obj
}

func (w *world) condition(t string) string {
	if c := conditions.Get(w.consumer(), t); c != nil {
		return string(c.Status) + "|" + c.Reason + "|" + c.Message
	}
	return ""
}

// applied is the revision in the applied ConfigMap, "" when there is none.
func (w *world) applied() string {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "app"}, cm); err != nil {
		w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		return ""
	}
	return cm.Data["revision"]
}

// drift changes the applied ConfigMap behind the owner's back.
func (w *world) drift() {
	cm := &corev1.ConfigMap{}
	w.g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "app"}, cm)).To(Succeed())
	cm.Data["revision"] = "drifted"
	w.g.Expect(env.Client.Update(context.Background(), cm)).To(Succeed())
}

// appliedThenHeld: r1 applied, the ConfigMap drifted, the gate closed and r2 asked for.
func (w *world) appliedThenHeld() {
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(w.applied()).To(Equal("r1"))
	w.drift()
	gatestest.SetOpened(w.t, env.Client, w.ns, "freeze", false)
	w.update(func(obj *testapi.Consumer) { obj.Spec.Revision = "r2" })
}

func (w *world) eventList() []string {
	var out []string
	for {
		select {
		case e := <-w.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// The lifecycle of the owners (ResourceSet, ManifestGeneration) on the Consumer kind.
func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(w *world)
	}{{
		name: "success: applied, in the inventory, Ready, the generation observed",
		run: func(w *world) {
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			w.g.Expect(w.result.RequeueAfter).To(Equal(time.Hour))
			w.g.Expect(w.applied()).To(Equal("r1"))
			obj := w.consumer()
			w.g.Expect(obj.Status.LastAppliedRevision).To(Equal("r1"))
			w.g.Expect(obj.Status.Inventory.Entries).To(Equal([]testapi.ConsumerRef{{ID: w.ns + "_app__ConfigMap", Version: "v1"}}))
			w.g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
			w.g.Expect(obj.Finalizers).To(Equal([]string{finalizer}))
			w.g.Expect(w.condition(meta.ReadyCondition)).To(Equal("True|ReconciliationSucceeded|Applied revision: r1"))
			w.g.Expect(w.condition(meta.ReconcilingCondition)).To(BeEmpty())
		},
	}, {
		name: "transient error: Ready=False, Reconciling with retry, the generation not observed",
		run: func(w *world) {
			w.update(func(obj *testapi.Consumer) {
				obj.Annotations = map[string]string{planErrAnnotation: "source unavailable"}
			})
			w.reconcile()
			w.g.Expect(w.err).To(MatchError("source unavailable"))
			w.g.Expect(w.condition(meta.ReadyCondition)).To(Equal("False|ReconciliationFailed|source unavailable"))
			w.g.Expect(w.condition(meta.ReconcilingCondition)).To(Equal("True|ProgressingWithRetry|source unavailable"))
			w.g.Expect(w.condition(meta.StalledCondition)).To(BeEmpty())
			w.g.Expect(w.consumer().Status.ObservedGeneration).To(BeZero())
		},
	}, {
		name: "terminal error: Stalled with Ready's reason, the generation observed",
		run: func(w *world) {
			w.update(func(obj *testapi.Consumer) { obj.Annotations = map[string]string{planErrAnnotation: "terminal"} })
			w.reconcile()
			w.g.Expect(errors.Is(w.err, reconcile.TerminalError(nil))).To(BeTrue(), "%v", w.err)
			w.g.Expect(w.condition(meta.StalledCondition)).To(Equal("True|InvalidSpec|the spec cannot be rendered"))
			w.g.Expect(w.condition(meta.ReconcilingCondition)).To(BeEmpty())
			obj := w.consumer()
			w.g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
			w.g.Expect(w.applied()).To(BeEmpty())
		},
	}, {
		name: "closed gates replay the remembered objects: drift is corrected, nothing new applied",
		run: func(w *world) {
			w.appliedThenHeld()
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			w.g.Expect(w.applied()).To(Equal("r1"), "the last applied objects, again")
			obj := w.consumer()
			w.g.Expect(obj.Status.LastAppliedRevision).To(Equal("r1"))
			w.g.Expect(obj.Status.Gates.WaitingRevision).To(Equal("r2"))
			w.g.Expect(w.condition(gatesapi.BlockedCondition)).To(HavePrefix("True|GateClosed|"))
		},
	}, {
		name: "nothing is applied after a restart while held: the objects are not remembered",
		run: func(w *world) {
			w.appliedThenHeld()
			w.restart()
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			w.g.Expect(w.result.RequeueAfter).To(Equal(time.Hour))
			w.g.Expect(w.applied()).To(Equal("drifted"), "nothing applied until the gates open")
			w.g.Expect(w.consumer().Status.LastAppliedRevision).To(Equal("r1"))

			gatestest.SetOpened(w.t, env.Client, w.ns, "freeze", true)
			w.reconcile()
			w.g.Expect(w.applied()).To(Equal("r2"))
		},
	}, {
		name: "the prior Ready is restored while held: not the Progressing of the new spec",
		run: func(w *world) {
			w.appliedThenHeld()
			before := conditions.Get(w.consumer(), meta.ReadyCondition)
			w.restart()
			w.reconcile()
			after := conditions.Get(w.consumer(), meta.ReadyCondition)
			w.g.Expect(after.Status).To(Equal(metav1.ConditionTrue))
			w.g.Expect(after.Reason).To(Equal(before.Reason))
			w.g.Expect(after.Message).To(HavePrefix(before.Message + "; revision 'r2' waits for the gates"))
			w.g.Expect(w.condition(meta.ReconcilingCondition)).To(BeEmpty())
		},
	}, {
		name: "deleted: what was applied is garbage collected, then the finalizer goes",
		run: func(w *world) {
			w.reconcile()
			w.g.Expect(w.applied()).To(Equal("r1"))
			w.g.Expect(env.Client.Delete(context.Background(), w.consumer())).To(Succeed())
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			w.g.Expect(w.applied()).To(BeEmpty())
			w.g.Expect(apierrors.IsNotFound(env.Client.Get(context.Background(), w.key, &testapi.Consumer{}))).To(BeTrue())
		},
	}, {
		name: "a missing ServiceAccount keeps the objects on delete, with a warning, and lets the owner go",
		run: func(w *world) {
			w.reconcile()
			w.g.Expect(w.applied()).To(Equal("r1"))
			w.update(func(obj *testapi.Consumer) { obj.Annotations = map[string]string{serviceAccountAnnotation: "missing"} })
			w.g.Expect(env.Client.Delete(context.Background(), w.consumer())).To(Succeed())
			w.eventList()
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			w.g.Expect(w.applied()).To(Equal("r1"), "left in place")
			w.g.Expect(apierrors.IsNotFound(env.Client.Get(context.Background(), w.key, &testapi.Consumer{}))).To(BeTrue())
			w.g.Expect(strings.Join(w.eventList(), "\n")).To(ContainSubstring(
				"Warning ReconciliationFailed the generated objects were left in place: ServiceAccount '" + w.ns + "/missing' does not exist"))
		},
	}, {
		name: "suspended: the request echoed, the finalizer added, nothing applied",
		run: func(w *world) {
			w.update(func(obj *testapi.Consumer) {
				obj.Spec.Suspend = true
				obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
			})
			w.reconcile()
			w.g.Expect(w.err).NotTo(HaveOccurred())
			obj := w.consumer()
			w.g.Expect(obj.Status.LastHandledReconcileAt).To(Equal("now"))
			w.g.Expect(obj.Finalizers).To(Equal([]string{finalizer}))
			w.g.Expect(w.applied()).To(BeEmpty())
			w.g.Expect(w.condition(meta.ReconcilingCondition)).To(BeEmpty())
		},
	}} {
		t.Run(tc.name, func(t *testing.T) { tc.run(newWorld(t)) })
	}
}
