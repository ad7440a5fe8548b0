package secrets_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// dockerConfig is the data of a kubernetes.io/dockerconfigjson Secret whose entries map a key
// to a user (password "p"), each written as `kubectl create secret docker-registry` does.
func dockerConfig(entries map[string]string) map[string][]byte {
	auths := map[string]any{}
	for key, user := range entries {
		auths[key] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":p"))}
	}
	raw, _ := json.Marshal(map[string]any{"auths": auths})
	return map[string][]byte{corev1.DockerConfigJsonKey: raw}
}

// userFor is the user the keychain gives the repository ref ("" for anonymous), resolved as
// go-containerregistry's remote resolves it.
func userFor(g Gomega, k authn.Keychain, ref string) string {
	repo, err := name.NewRepository(ref)
	g.Expect(err).NotTo(HaveOccurred())
	auth, err := authn.Resolve(context.Background(), k, repo)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := authn.Authorization(context.Background(), auth)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg.Username
}

// Each form a docker config key is written in, and which repositories it serves.
func TestRegistriesKeyForms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     string
		serves  []string
		refuses []string
	}{
		{name: "host", key: "ghcr.io", serves: []string{"ghcr.io/team/app"}, refuses: []string{"quay.io/team/app"}},
		{name: "https URL", key: "https://ghcr.io", serves: []string{"ghcr.io/team/app"}},
		{name: "https URL with a trailing slash", key: "https://ghcr.io/", serves: []string{"ghcr.io/app"}},
		{name: "http URL", key: "http://registry.local:5000", serves: []string{"registry.local:5000/app"}},
		{name: "URL with the v2 API path", key: "https://ghcr.io/v2/", serves: []string{"ghcr.io/team/app"}},
		{name: "host and port", key: "127.0.0.1:5000", serves: []string{"127.0.0.1:5000/charts/app"},
			refuses: []string{"127.0.0.1:5001/charts/app", "127.0.0.1/charts/app"}},
		{name: "https URL with a port", key: "https://127.0.0.1:5000", serves: []string{"127.0.0.1:5000/charts/app"}},
		{name: "upper-case host", key: "GHCR.io", serves: []string{"ghcr.io/app"}},
		{name: "host and path", key: "ghcr.io/team", serves: []string{"ghcr.io/team/app", "ghcr.io/team/sub/app"},
			refuses: []string{"ghcr.io/team2/app", "ghcr.io/other/app"}},
		{name: "https URL and path", key: "https://ghcr.io/team/", serves: []string{"ghcr.io/team/app"},
			refuses: []string{"ghcr.io/teamx/app"}},
		{name: "the full repository", key: "ghcr.io/team/app", serves: []string{"ghcr.io/team/app"},
			refuses: []string{"ghcr.io/team/application"}},
		{name: "Docker Hub's legacy key", key: "https://index.docker.io/v1/",
			serves: []string{"nginx", "library/nginx", "docker.io/team/app", "index.docker.io/team/app", "registry-1.docker.io/team/app"}},
		{name: "docker.io", key: "docker.io", serves: []string{"nginx", "index.docker.io/team/app"}},
		{name: "index.docker.io", key: "index.docker.io", serves: []string{"team/app"}},
		{name: "registry-1.docker.io", key: "registry-1.docker.io", serves: []string{"team/app"}},
		{name: "Docker Hub with a path", key: "docker.io/team", serves: []string{"team/app"}, refuses: []string{"nginx", "other/app"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var k secrets.Registries
			g.Expect(k.Add(dockerConfig(map[string]string{tc.key: "user"}))).To(Succeed())
			for _, ref := range tc.serves {
				g.Expect(userFor(g, &k, ref)).To(Equal("user"), ref)
			}
			for _, ref := range tc.refuses {
				g.Expect(userFor(g, &k, ref)).To(BeEmpty(), ref)
			}
		})
	}
}

// The longest host and path wins, whatever the order or the form of the keys; of equal keys,
// the first Secret's.
func TestRegistriesLongestMatch(t *testing.T) {
	g := NewWithT(t)
	var k secrets.Registries
	g.Expect(k.Add(dockerConfig(map[string]string{"https://ghcr.io": "host", "quay.io": "quay"}))).To(Succeed())
	g.Expect(k.Add(dockerConfig(map[string]string{"ghcr.io/team/": "team", "ghcr.io/team/app": "app"}))).To(Succeed())
	g.Expect(k.Add(dockerConfig(map[string]string{"ghcr.io": "second", "https://quay.io/v2/": "second"}))).To(Succeed())
	g.Expect(k.Add(map[string][]byte{corev1.DockerConfigKey: []byte(`{"https://index.docker.io/v1/":{"username":"hub","password":"p"}}`)})).To(Succeed())

	for ref, user := range map[string]string{
		"ghcr.io/team/app":         "app",
		"ghcr.io/team/app/sub":     "app",
		"ghcr.io/team/other":       "team",
		"ghcr.io/other":            "host",
		"quay.io/x/y":              "quay",
		"nginx":                    "hub",
		"registry.example.com/app": "",
	} {
		g.Expect(userFor(g, &k, ref)).To(Equal(user), ref)
	}
	auth, ok := k.Lookup("oci://ghcr.io/team/app")
	g.Expect(ok).To(BeTrue())
	g.Expect(auth.Username).To(Equal("app"))
	_, ok = (*secrets.Registries)(nil).Lookup("ghcr.io")
	g.Expect(ok).To(BeFalse())
}

// What a Secret that is not a docker config gets, without a byte of its content in the error.
func TestRegistriesErrors(t *testing.T) {
	g := NewWithT(t)
	var k secrets.Registries
	g.Expect(k.Add(map[string][]byte{"username": []byte("u")})).To(MatchError(secrets.ErrNoDockerConfig))
	g.Expect(k.Add(map[string][]byte{"username": []byte("u")})).To(MatchError("holds neither '.dockerconfigjson' nor '.dockercfg'"))
	err := k.Add(map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"x":{"password":"hunter2`)})
	g.Expect(err).To(MatchError("'.dockerconfigjson' is not a Docker config JSON"))
	err = k.Add(map[string][]byte{corev1.DockerConfigKey: []byte(`hunter2`)})
	g.Expect(err).To(MatchError("'.dockercfg' is not a Docker config JSON"))

	// One Secret for one source: no entry for it is an error, not an anonymous pull.
	_, err = secrets.RegistryAuth(dockerConfig(map[string]string{"ghcr.io": "u"}), "quay.io/app")
	g.Expect(err).To(MatchError("no credentials for 'quay.io/app'"))
	g.Expect(err).To(MatchError(secrets.ErrNoRegistryCredentials))
	auth, err := secrets.RegistryAuth(dockerConfig(map[string]string{"https://ghcr.io": "u"}), "ghcr.io/app")
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := auth.Authorization()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Username).To(Equal("u"))
	g.Expect(cfg.Password).To(Equal("p"))
}
