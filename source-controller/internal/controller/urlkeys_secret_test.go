package controller

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
)

// Replicas starting together read the URL keys from one Secret, which the first creates: all
// get the same key. A Secret without a usable key stops them with a message naming it, not
// its content.
func TestURLKeysFromSecretSharedByReplicas(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	keys := make([][][]byte, 3)
	errs := make([]error, 3)
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = storage.URLKeysFromSecret(ctx, k8s, k8s, ns, "artifact-url-keys") })
	}
	wg.Wait()
	for i := range keys {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(keys[i]).To(HaveLen(1))
		g.Expect(len(keys[i][0])).To(BeNumerically(">=", storage.MinURLKeySize))
		g.Expect(keys[i]).To(Equal(keys[0]))
	}
	s := &corev1.Secret{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "artifact-url-keys"}, s)).To(Succeed())
	g.Expect(string(s.Data[storage.URLKeysSecretKey])).To(Equal(string(keys[0][0]) + "\n"))

	g.Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short"},
		Data: map[string][]byte{storage.URLKeysSecretKey: []byte("too-short-a-key\n")}})).To(Succeed())
	_, err := storage.URLKeysFromSecret(ctx, k8s, k8s, ns, "short")
	g.Expect(err).To(MatchError(ContainSubstring("artifact URL keys of secret '" + ns + "/short' (key 'keys'): the key of line 1 is shorter than 32 bytes")))
	g.Expect(err.Error()).NotTo(ContainSubstring("too-short-a-key"))
}
