package testserver_test

import (
	"archive/tar"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// untar reads an uncompressed tar stream into name -> content.
func untar(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = string(data)
	}
}

func TestRegistryPushArtifact(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts testserver.RegistryOptions
	}{
		{"plain HTTP", testserver.RegistryOptions{}},
		{"TLS and basic auth", testserver.RegistryOptions{TLS: true, Username: "oci", Password: "s3cret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			reg := testserver.NewRegistry(t, tc.opts)
			files := map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n", "README.md": "hello\n"}
			annotations := map[string]string{
				"org.opencontainers.image.revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
				"org.opencontainers.image.source":   "https://github.com/example/app",
			}
			digest := reg.PushArtifact(t, "apps/manifests:v1", files, annotations)
			g.Expect(digest).To(HavePrefix("sha256:"))

			ref, err := name.ParseReference(reg.Host() + "/apps/manifests:v1")
			g.Expect(err).NotTo(HaveOccurred())
			img, err := remote.Image(ref, reg.RemoteOptions()...)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := img.Digest()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.String()).To(Equal(digest))

			manifest, err := img.Manifest()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(manifest.MediaType).To(Equal(types.OCIManifestSchema1))
			g.Expect(manifest.Config.MediaType).To(Equal(types.MediaType(testserver.FluxConfigMediaType)))
			g.Expect(manifest.Annotations).To(Equal(annotations))
			g.Expect(manifest.Layers).To(HaveLen(1))
			g.Expect(manifest.Layers[0].MediaType).To(Equal(types.MediaType(testserver.FluxContentMediaType)))

			layers, err := img.Layers()
			g.Expect(err).NotTo(HaveOccurred())
			rc, err := layers[0].Uncompressed()
			g.Expect(err).NotTo(HaveOccurred())
			defer rc.Close()
			g.Expect(untar(t, rc)).To(Equal(files))

			// The same files give the same digest: the archive is reproducible.
			g.Expect(reg.PushArtifact(t, "oci://"+reg.Host()+"/apps/manifests:v2", files, annotations)).To(Equal(digest))

			// crane sees both tags.
			tags, err := crane.ListTags(reg.Host()+"/apps/manifests", crane.WithTransport(reg.Transport()), crane.WithAuth(authFor(tc.opts)))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tags).To(ConsistOf("v1", "v2"))
		})
	}
}

func TestRegistryPushArtifactMediaType(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushArtifactWithMediaType(t, "apps/other:latest", "application/vnd.example.layer.v1.tar+gzip", map[string]string{"a.txt": "a"}, nil)

	raw, err := crane.Manifest(reg.Host()+"/apps/other:latest", crane.WithTransport(reg.Transport()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(ContainSubstring(`"mediaType":"application/vnd.example.layer.v1.tar+gzip"`))
	g.Expect(string(raw)).NotTo(ContainSubstring(`"annotations"`))

	img, err := crane.Pull(reg.Host()+"/apps/other:latest", crane.WithTransport(reg.Transport()))
	g.Expect(err).NotTo(HaveOccurred())
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	rc, err := layers[0].Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	g.Expect(untar(t, rc)).To(Equal(map[string]string{"a.txt": "a"}))
}

// authFor is the go-containerregistry authenticator for the registry's options.
func authFor(opts testserver.RegistryOptions) authn.Authenticator {
	if opts.Username == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: opts.Username, Password: opts.Password}
}
