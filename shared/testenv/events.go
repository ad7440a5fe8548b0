package testenv

import (
	"context"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventsOf lists the events recorded for the object key (of kind, or of any kind when kind is
// empty) as "type reason: message", for Eventually and Expect.
func EventsOf(c client.Reader, key client.ObjectKey, kind string) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(c.List(context.Background(), list, client.InNamespace(key.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == key.Name && (kind == "" || e.InvolvedObject.Kind == kind) {
				out = append(out, e.Type+" "+e.Reason+": "+e.Message)
			}
		}
		return out
	}
}
