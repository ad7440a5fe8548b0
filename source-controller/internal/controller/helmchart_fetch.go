package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	helmregistry "helm.sh/helm/v4/pkg/registry"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/chart"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

// How a HelmChart reaches its chart upstream: where to download it from an HTTP repository and
// with which credentials (buildFromHelmRepository), and the registry client and version choice
// of a repository of type oci (buildFromOCI). The credentials and TLS settings are the
// HelmRepository's (helmRepositoryAccess, source_auth.go).

// remoteReference is where and how to download a chart of a repository index: relative URLs
// resolve against the repository URL; credentials go to the repository's host only, unless
// spec.passCredentials.
func (r *HelmChartReconciler) remoteReference(ctx context.Context, repo *sourcev1.HelmRepository, ref *index.ChartVersion) (chart.RemoteReference, error) {
	if len(ref.URLs) == 0 {
		return chart.RemoteReference{}, fmt.Errorf("chart '%s' version '%s' has no URL in the index", ref.Name, ref.Version)
	}
	base, err := url.Parse(strings.TrimSuffix(repo.Spec.URL, "/") + "/")
	if err != nil {
		return chart.RemoteReference{}, err
	}
	u, err := base.Parse(ref.URLs[0])
	if err != nil {
		return chart.RemoteReference{}, fmt.Errorf("chart URL '%s': %w", ref.URLs[0], err)
	}
	access, err := r.helmRepositoryAccess(ctx, repo)
	if err != nil {
		return chart.RemoteReference{}, err
	}
	remote := chart.RemoteReference{URL: u.String(), Digest: ref.Digest, TLS: access.Transport.TLSClientConfig}
	if u.Host == base.Host || repo.Spec.PassCredentials {
		remote.Username, remote.Password = access.Username, access.Password
	}
	return remote, nil
}

// registryClient is Helm's registry client with the repository's credentials, CA and
// plain-HTTP setting, and a credentials file of its own (never the controller user's).
func (r *HelmChartReconciler) registryClient(ctx context.Context, repo *sourcev1.HelmRepository, tmp string) (*helmregistry.Client, error) {
	access, err := r.helmRepositoryAccess(ctx, repo)
	if err != nil {
		return nil, err
	}
	opts := []helmregistry.ClientOption{
		helmregistry.ClientOptCredentialsFile(filepath.Join(tmp, "registry.json")),
		helmregistry.ClientOptHTTPClient(&http.Client{Transport: access.Transport}),
	}
	if repo.Spec.Insecure {
		opts = append(opts, helmregistry.ClientOptPlainHTTP())
	}
	if access.Username != "" {
		opts = append(opts, helmregistry.ClientOptBasicAuth(access.Username, access.Password))
	}
	return helmregistry.NewClient(opts...)
}

// newestInRange picks the highest version among a chart's tags within the range (default `*`),
// with the message Helm repositories give when none matches.
func newestInRange(tags []string, name, rng string) (string, error) {
	if rng == "" {
		rng = "*"
	}
	v, err := highestTag(tags, rng)
	if errors.Is(err, errNoTagInRange) {
		return "", errors.New("no '" + name + "' chart with version matching '" + rng + "' found")
	}
	return v, err
}
