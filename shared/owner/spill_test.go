package owner_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/internal/testapi"
)

// An inventory past the limit is kept in ConfigMaps beside the owner, and still does its work:
// read back by a new process, it prunes what left the set, and the ConfigMaps of an earlier
// inventory go once the status no longer names them. A chunk deleted or replaced by a tenant is
// never trusted: nothing is pruned on its word, and a Warning says the inventory is lost.
func TestInventoryPastTheLimitLivesInConfigMaps(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	limit := func() { w.l.InventoryLimit = 400 } // bytes: about 8 entries of this test
	limit()
	names := func(prefix string, n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
		return strings.Join(out, ",")
	}
	setObjects := func(v string) {
		w.update(func(obj *testapi.Consumer) { obj.Annotations = map[string]string{objectsAnnotation: v} })
	}
	statusIDs := func() []string {
		var ids []string
		for _, e := range w.consumer().Status.Inventory.Entries {
			ids = append(ids, e.ID)
		}
		return ids
	}
	chunks := func() []corev1.ConfigMap {
		var list corev1.ConfigMapList
		w.g.Expect(env.Client.List(ctx, &list, client.InNamespace(w.ns))).To(Succeed())
		var out []corev1.ConfigMap
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "sluice-inventory-") {
				out = append(out, cm)
			}
		}
		return out
	}
	existing := func(prefix string) []string {
		var list corev1.ConfigMapList
		w.g.Expect(env.Client.List(ctx, &list, client.InNamespace(w.ns))).To(Succeed())
		var out []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, prefix) {
				out = append(out, cm.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	wholeInventory := func() []string {
		entries, err := w.l.Inventory(ctx, w.consumer())
		w.g.Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, e := range entries {
			ids = append(ids, e.ID)
		}
		return ids
	}

	// 20 objects: the status names one chunk, which holds all 20, immutable, labelled and owned.
	setObjects(names("app", 20))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(existing("app")).To(HaveLen(20))
	first := chunks()
	w.g.Expect(first).To(HaveLen(1))
	w.g.Expect(statusIDs()).To(Equal([]string{w.ns + "_" + first[0].Name + "__ConfigMap"}))
	w.g.Expect(*first[0].Immutable).To(BeTrue())
	w.g.Expect(first[0].Labels).To(HaveKeyWithValue("testing.sluice.dev/inventory-of", string(w.consumer().UID)))
	w.g.Expect(first[0].OwnerReferences).To(ConsistOf(HaveField("UID", w.consumer().UID)))
	w.g.Expect(wholeInventory()).To(HaveLen(20))
	w.g.Expect(wholeInventory()).To(ContainElement(w.ns + "_app07__ConfigMap"))

	// A new process (nothing remembered) shrinks the set to 5: the chunk is read, 15 objects
	// are pruned, the status lists the 5 itself, and the chunk is gone.
	w.restart()
	limit()
	setObjects(names("app", 5))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(existing("app")).To(Equal(strings.Split(names("app", 5), ",")))
	w.g.Expect(statusIDs()).To(HaveLen(5))
	w.g.Expect(chunks()).To(BeEmpty())

	// Grown again: spilled. A tenant deletes the chunk: the next reconcile, in a new process,
	// cannot read the inventory, warns, and prunes nothing; the new inventory is written whole.
	setObjects(names("app", 20))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(chunks()).To(HaveLen(1))
	gone := chunks()[0]
	w.g.Expect(env.Client.Delete(ctx, &gone)).To(Succeed())
	w.restart()
	limit()
	setObjects(names("app", 3))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(w.eventList()).To(ContainElement(And(HavePrefix("Warning InventoryLost the inventory is lost"),
		ContainSubstring(gone.Name+" is gone"))))
	w.g.Expect(existing("app")).To(HaveLen(20), "nothing pruned on a lost inventory")
	w.g.Expect(statusIDs()).To(HaveLen(3))

	// Spilled once more. A tenant replaces the chunk with one of the same name that lists a
	// victim: the digest tells, the victim stays.
	setObjects(names("app", 20))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(chunks()).To(HaveLen(1))
	forged := chunks()[0]
	// The victim carries the owner's labels: pruned, were the forged list believed.
	app := &corev1.ConfigMap{}
	w.g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "app00"}, app)).To(Succeed())
	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "victim", Labels: app.Labels}}
	w.g.Expect(env.Client.Create(ctx, victim)).To(Succeed())
	w.g.Expect(env.Client.Delete(ctx, &forged)).To(Succeed())
	forged.ResourceVersion, forged.UID = "", ""
	list := fmt.Sprintf(`{"id":"%s_victim__ConfigMap","v":"v1"}`, w.ns)
	for _, name := range strings.Split(names("app", 20), ",") {
		list += fmt.Sprintf(`,{"id":"%s_%s__ConfigMap","v":"v1"}`, w.ns, name)
	}
	forged.BinaryData = map[string][]byte{"entries.json.gz": gzipped(t, "["+list+"]")}
	w.g.Expect(env.Client.Create(ctx, &forged)).To(Succeed())
	w.restart()
	limit()
	setObjects(names("app", 2))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(w.eventList()).To(ContainElement(And(HavePrefix("Warning InventoryLost"),
		ContainSubstring("does not hold what its name says"))))
	w.g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(victim), &corev1.ConfigMap{})).To(Succeed())
	w.g.Expect(existing("app")).To(HaveLen(20))

	// Spilled, then deleted: the 12 objects of the inventory and the chunks go; the 8 that the
	// lost inventory no longer listed stay.
	setObjects(names("app", 12))
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(chunks()).To(HaveLen(1))
	w.g.Expect(env.Client.Delete(ctx, w.consumer())).To(Succeed())
	w.reconcile()
	w.g.Expect(w.err).NotTo(HaveOccurred())
	w.g.Expect(existing("app")).To(Equal(strings.Split(names("app", 20), ",")[12:]))
	w.g.Expect(chunks()).To(BeEmpty())
	err := env.Client.Get(ctx, w.key, &testapi.Consumer{})
	w.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

func gzipped(t *testing.T, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
