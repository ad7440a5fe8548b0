package imagescan

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-gitops/sluice/shared/secrets"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// dockerConfigJSON is the data of a kubernetes.io/dockerconfigjson Secret.
func dockerConfigJSON(registry, username, password string) map[string][]byte {
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	return map[string][]byte{
		corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, registry, auth),
	}
}

// keychain reads the data of image pull Secrets, in order, as the automation does.
func keychain(t *testing.T, pullSecrets ...map[string][]byte) *secrets.Registries {
	t.Helper()
	k := &secrets.Registries{}
	for _, data := range pullSecrets {
		NewWithT(t).Expect(k.Add(data)).To(Succeed())
	}
	return k
}

func TestBasicAuthThroughPullSecrets(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "bot", Password: "s3cret"})
	reg.PushImage(t, "team/app", "1.0.0", epoch)
	reg.PushImage(t, "team/app", "1.1.0", epoch.Add(time.Hour))
	repo := repository(t, reg.Host(), "team/app")
	ctx := context.Background()
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})

	// Without credentials the registry refuses.
	_, err := s.Tags(ctx, repo, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("UNAUTHORIZED")))

	// A wrong secret for another registry first, then a wrong password for a
	// longer path of another repository, then the right one for the host:
	// the host's entry is the one that matches.
	k := keychain(t,
		dockerConfigJSON("ghcr.io", "x", "y"),
		dockerConfigJSON(reg.Host()+"/other", "bot", "wrong"),
		dockerConfigJSON("https://"+reg.Host()+"/v2/", "bot", "s3cret"),
	)
	tags, err := s.Tags(ctx, repo, Options{Keychain: k})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0", "1.1.0"))
	got, err := s.Newest(ctx, repo, mustFilter(t, "*"), Options{Keychain: k})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("1.1.0"))

	// The list cached for the credentials is not handed to a caller
	// without them.
	_, err = s.Tags(ctx, repo, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("UNAUTHORIZED")))

	// The first secret wins for the same registry.
	k = keychain(t,
		dockerConfigJSON(reg.Host(), "bot", "wrong"),
		dockerConfigJSON(reg.Host(), "bot", "s3cret"),
	)
	_, err = s.Tags(ctx, repo, Options{Keychain: k})
	g.Expect(err).To(MatchError(ContainSubstring("UNAUTHORIZED")))

	// Auth given directly.
	_, err = s.Tags(ctx, repo, Options{Auth: &authn.Basic{Username: "bot", Password: "s3cret"}})
	g.Expect(err).NotTo(HaveOccurred())
}

func TestTLSThroughTransport(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{TLS: true})
	reg.PushImage(t, "app", "1.0.0", epoch)
	repo := repository(t, reg.Host(), "app")
	ctx := context.Background()
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})

	// The test CA is not trusted by default.
	_, err := s.Tags(ctx, repo, Options{Transport: http.DefaultTransport.(*http.Transport).Clone()})
	g.Expect(err).To(HaveOccurred())

	tags, err := s.Tags(ctx, repo, Options{Transport: reg.Transport()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0"))
	got, err := s.Newest(ctx, repo, mustFilter(t, "*"), Options{Transport: reg.Transport()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal("1.0.0"))
}

func TestInsecure(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	s := New(Config{Addresses: allowLoopback, Clock: newClock()})
	tags, err := s.Tags(context.Background(), repository(t, reg.Host(), "app"), Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("1.0.0"))
}
