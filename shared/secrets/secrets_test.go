package secrets_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

func TestGetAndList(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secrets-"}}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	for _, name := range []string{"picked", "other"} {
		g.Expect(env.Client.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{"pick": fmt.Sprint(name == "picked")}},
			Type:       corev1.SecretTypeBasicAuth,
			Data:       map[string][]byte{"username": []byte(name), "password": []byte("s3cret")},
		})).To(Succeed())
	}

	// The whole Secret, type included.
	s, err := secrets.Get(t.Context(), env.Client, client.ObjectKey{Namespace: ns.Name, Name: "picked"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Type).To(Equal(corev1.SecretTypeBasicAuth))
	g.Expect(s.Data).To(HaveKeyWithValue("username", []byte("picked")))

	// The API's own error, for callers that word it themselves.
	_, err = secrets.Get(t.Context(), env.Client, client.ObjectKey{Namespace: ns.Name, Name: "missing"})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	g.Expect(err).To(MatchError(`secrets "missing" not found`))

	list, err := secrets.List(t.Context(), env.Client, ns.Name, client.MatchingLabels{"pick": "true"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].Name).To(Equal("picked"))
}
