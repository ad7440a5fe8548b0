package testserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	helmregistry "helm.sh/helm/v4/pkg/registry"
)

// Media types of a Flux OCI artifact, as `flux push artifact` writes them.
const (
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
)

// HelmClient is a Helm registry client for this registry, logged in with username and
// password when username is set, speaking plain HTTP or trusting the test certificate. Its
// credentials file is a fresh temporary path, so neither the machine's Helm nor Docker login
// leak into a test.
func (r *Registry) HelmClient(t testing.TB, username, password string) *helmregistry.Client {
	t.Helper()
	opts := []helmregistry.ClientOption{
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")),
	}
	if r.TLS() {
		opts = append(opts, helmregistry.ClientOptHTTPClient(&http.Client{Transport: r.Transport()}))
	} else {
		opts = append(opts, helmregistry.ClientOptPlainHTTP())
	}
	if username != "" {
		opts = append(opts, helmregistry.ClientOptBasicAuth(username, password))
	}
	client, err := helmregistry.NewClient(opts...)
	if err != nil {
		t.Fatalf("testserver: Helm registry client: %v", err)
	}
	return client
}

// PushChart packages the chart with Helm's chartutil.Save and pushes it with Helm's registry
// client (what `helm push` does) to oci://<host>/<repo>/<name>:<version> ("+" in the version
// becomes "_" in the tag, as Helm does), with the registry's credentials. repo may be empty or
// nested ("org/charts"). It returns the manifest's digest ("sha256:...").
func (r *Registry) PushChart(t testing.TB, repo string, c ChartSpec) string {
	t.Helper()
	archive := PackageChart(t, t.TempDir(), c)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	ref := r.Host()
	if repo = strings.Trim(repo, "/"); repo != "" {
		ref += "/" + repo
	}
	ref += "/" + c.Name + ":" + c.Version
	result, err := r.HelmClient(t, r.username, r.password).Push(data, "oci://"+ref)
	if err != nil {
		t.Fatalf("testserver: pushing chart to oci://%s: %v", ref, err)
	}
	return result.Manifest.Digest
}

// PushArtifact pushes a Flux-style OCI artifact to ref ("<repo>:<tag>" on this registry;
// "oci://" and the registry's host are accepted in front): one layer of media type
// FluxContentMediaType holding a tar.gz of files (slash paths to contents), a config of media
// type FluxConfigMediaType, and the given manifest annotations (e.g.
// org.opencontainers.image.revision and .source). It returns the manifest's digest.
func (r *Registry) PushArtifact(t testing.TB, ref string, files, annotations map[string]string) string {
	t.Helper()
	return r.PushArtifactWithMediaType(t, ref, "", files, annotations)
}

// PushArtifactWithMediaType is PushArtifact with the layer's media type chosen
// (FluxContentMediaType when empty), to test artifacts a controller must refuse or select by
// media type.
func (r *Registry) PushArtifactWithMediaType(t testing.TB, ref, layerMediaType string, files, annotations map[string]string) string {
	t.Helper()
	if layerMediaType == "" {
		layerMediaType = FluxContentMediaType
	}
	parsed, err := name.ParseReference(r.fullRef(ref))
	if err != nil {
		t.Fatalf("testserver: reference %q: %v", ref, err)
	}
	tgz, err := tarGzip(files)
	if err != nil {
		t.Fatalf("testserver: archiving artifact %s: %v", ref, err)
	}

	// Built as `flux push artifact` builds it: an OCI manifest over an empty image with the
	// Flux config media type and one static (already compressed) layer.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, FluxConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(tgz, types.MediaType(layerMediaType))})
	if err != nil {
		t.Fatalf("testserver: artifact %s: %v", ref, err)
	}
	if len(annotations) > 0 {
		img = mutate.Annotations(img, annotations).(v1.Image)
	}
	if err := remote.Write(parsed, img, r.remoteOptions()...); err != nil {
		t.Fatalf("testserver: pushing artifact %s: %v", parsed, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatalf("testserver: artifact %s: %v", ref, err)
	}
	return digest.String()
}

// RemoteOptions are go-containerregistry remote options for this registry: its credentials
// and a transport that trusts its certificate. go-containerregistry picks plain HTTP for a
// 127.0.0.1 registry by itself when HTTPS fails.
func (r *Registry) RemoteOptions() []remote.Option { return r.remoteOptions() }

func (r *Registry) remoteOptions() []remote.Option {
	auth := authn.Anonymous
	if r.username != "" {
		auth = &authn.Basic{Username: r.username, Password: r.password}
	}
	return []remote.Option{remote.WithAuth(auth), remote.WithTransport(r.Transport())}
}

// fullRef puts the registry's host in front of a reference that does not start with it.
func (r *Registry) fullRef(ref string) string {
	ref = strings.TrimPrefix(ref, "oci://")
	if strings.HasPrefix(ref, r.Host()+"/") {
		return ref
	}
	return r.Host() + "/" + strings.TrimPrefix(ref, "/")
}

// tarGzip archives files in name order with fixed modes and times, so the same files always
// give the same layer digest (and a test can expect an unchanged digest for unchanged
// content).
func tarGzip(files map[string]string) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if !fs.ValidPath(name) || name == "." {
			return nil, fmt.Errorf("file %q must be a clean relative slash path", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0).UTC()
	for _, name := range names {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name,
			Mode:     0o644,
			Size:     int64(len(files[name])),
			ModTime:  epoch,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
