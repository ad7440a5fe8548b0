package testserver_test

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestRegistryPushChartPullWithHelm(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testserver.RegistryOptions
	}{
		{"plain HTTP", testserver.RegistryOptions{}},
		{"TLS", testserver.RegistryOptions{TLS: true}},
		{"basic auth", testserver.RegistryOptions{Username: "oci", Password: "s3cret"}},
		{"TLS and basic auth", testserver.RegistryOptions{TLS: true, Username: "oci", Password: "s3cret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			reg := testserver.NewRegistry(t, tc.opts)
			g.Expect(reg.Host()).To(HavePrefix("127.0.0.1:"))
			g.Expect(reg.CAPEM() != nil).To(Equal(tc.opts.TLS))

			digest := reg.PushChart(t, "charts", testserver.ChartSpec{Name: "app", Version: "1.0.0", Values: map[string]any{"replicas": 2}})
			reg.PushChart(t, "charts", testserver.ChartSpec{Name: "app", Version: "1.1.0+build.7"})
			g.Expect(digest).To(HavePrefix("sha256:"))

			client := reg.HelmClient(t, tc.opts.Username, tc.opts.Password)
			ref := "oci://" + reg.Host() + "/charts/app"
			result, err := client.Pull(ref + ":1.0.0")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(result.Manifest.Digest).To(Equal(digest))
			g.Expect(result.Chart.Meta.Name).To(Equal("app"))
			ch, err := loader.LoadArchive(bytes.NewReader(result.Chart.Data))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ch.Name()).To(Equal("app"))
			g.Expect(ch.Metadata.Version).To(Equal("1.0.0"))
			g.Expect(ch.Values).To(HaveKeyWithValue("replicas", BeNumerically("==", 2)))

			// Helm stores "+" as "_" in tags and lists them back as SemVer.
			tags, err := client.Tags(reg.Host() + "/charts/app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tags).To(ConsistOf("1.1.0+build.7", "1.0.0"))

			// go-containerregistry reads the same manifest.
			parsed, err := name.ParseReference(reg.Host() + "/charts/app:1.0.0")
			g.Expect(err).NotTo(HaveOccurred())
			desc, err := remote.Get(parsed, reg.RemoteOptions()...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(desc.Digest.String()).To(Equal(digest))
		})
	}
}

func TestRegistryBasicAuth(t *testing.T) {
	for _, tls := range []bool{false, true} {
		label := "plain HTTP"
		if tls {
			label = "TLS"
		}
		t.Run(label, func(t *testing.T) {
			reg := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "oci", Password: "s3cret", TLS: tls})
			reg.PushChart(t, "charts", testserver.ChartSpec{Name: "app", Version: "1.0.0"})
			reg.PushArtifact(t, "apps/manifests:v1", map[string]string{"cm.yaml": "kind: ConfigMap\n"}, nil)
			chartRef := "oci://" + reg.Host() + "/charts/app:1.0.0"

			t.Run("the challenge", func(t *testing.T) {
				g := NewWithT(t)
				client := &http.Client{Transport: reg.Transport()}
				scheme := "http://"
				if tls {
					scheme = "https://"
				}
				resp, err := client.Get(scheme + reg.Host() + "/v2/")
				g.Expect(err).NotTo(HaveOccurred())
				resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
				g.Expect(resp.Header.Get("WWW-Authenticate")).To(Equal(`Basic realm="registry"`))
			})
			t.Run("Helm without credentials", func(t *testing.T) {
				g := NewWithT(t)
				// ORAS answers the Basic challenge of the 401 by looking for credentials, and
				// has none.
				_, err := reg.HelmClient(t, "", "").Pull(chartRef)
				g.Expect(err).To(MatchError(ContainSubstring("basic credential not found")))
			})
			t.Run("Helm with a wrong password", func(t *testing.T) {
				g := NewWithT(t)
				_, err := reg.HelmClient(t, "oci", "wrong").Pull(chartRef)
				g.Expect(err).To(MatchError(ContainSubstring("401")))
			})
			t.Run("Helm with the right credentials", func(t *testing.T) {
				g := NewWithT(t)
				_, err := reg.HelmClient(t, "oci", "s3cret").Pull(chartRef, helmregistry.PullOptWithChart(true))
				g.Expect(err).NotTo(HaveOccurred())
			})
			t.Run("go-containerregistry", func(t *testing.T) {
				g := NewWithT(t)
				ref, err := name.ParseReference(reg.Host() + "/apps/manifests:v1")
				g.Expect(err).NotTo(HaveOccurred())
				_, err = remote.Image(ref, remote.WithTransport(reg.Transport()))
				var terr *transport.Error
				g.Expect(err).To(HaveOccurred())
				g.Expect(errors.As(err, &terr)).To(BeTrue(), "%v", err)
				g.Expect(terr.StatusCode).To(Equal(http.StatusUnauthorized))

				_, err = remote.Image(ref, remote.WithTransport(reg.Transport()),
					remote.WithAuth(&authn.Basic{Username: "oci", Password: "wrong"}))
				g.Expect(errors.As(err, &terr)).To(BeTrue(), "%v", err)
				g.Expect(terr.StatusCode).To(Equal(http.StatusUnauthorized))

				_, err = remote.Image(ref, remote.WithTransport(reg.Transport()),
					remote.WithAuth(&authn.Basic{Username: "oci", Password: "s3cret"}))
				g.Expect(err).NotTo(HaveOccurred())
			})
		})
	}
}
