package secrets_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

func TestData(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secrets-"}}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	g.Expect(env.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "auth"},
		Data: map[string][]byte{"password": []byte("s3cret")}})).To(Succeed())

	data, err := secrets.Data(t.Context(), env.Client, ns.Name, "auth")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(HaveKeyWithValue("password", []byte("s3cret")))

	// A missing Secret is named in the words users see, and still tells NotFound.
	_, err = secrets.Data(t.Context(), env.Client, ns.Name, "missing")
	g.Expect(err).To(MatchError("Secret '" + ns.Name + "/missing' not found"))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}
