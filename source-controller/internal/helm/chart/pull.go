package chart

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// userAgent identifies the controller to chart repositories (whose logs then tell a pull by
// the controller from one by a user's helm).
const userAgent = "sluice-source-controller"

// RemoteReference is a chart version resolved from a repository index.
type RemoteReference struct {
	// URL is the absolute http(s) URL of the chart archive.
	URL string
	// Digest is the SHA-256 of the archive from the index, hex, optionally prefixed with
	// "sha256:"; empty when the index does not give one. The download must match it.
	Digest string
	// Username and Password are sent as basic auth, only when one of them is set. The caller
	// decides whether the chart's host may receive them (Flux's passCredentials).
	Username, Password string
	// TLS configures HTTPS (CA, client certificate); nil uses the system roots.
	TLS *tls.Config
}

// Pull downloads the chart (bounded by Limits.MaxChartSize, checked against ref.Digest), loads
// it with this build's limits and path checks, and writes it into outDir as
// <name>-<version>.tgz: byte for byte as downloaded when neither values files nor version
// metadata are set, else repackaged with the merged values and the version with metadata.
func Pull(ctx context.Context, ref RemoteReference, outDir string, opts Options) (*Result, error) {
	data, shownURL, err := download(ctx, ref, opts.Limits.withDefaults())
	if err != nil {
		return nil, err
	}
	return FromArchive(data, shownURL, outDir, opts)
}

// FromArchive builds from a chart archive already downloaded (from an OCI registry, say): it
// is loaded with this build's limits and path checks, and written like Pull writes it. origin
// names where it came from in errors.
func FromArchive(data []byte, origin, outDir string, opts Options) (*Result, error) {
	lim := opts.Limits.withDefaults()
	if int64(len(data)) > lim.MaxChartSize {
		return nil, as(ErrTooLarge, fmt.Errorf("chart from %s is larger than --helm-chart-max-size (%d bytes)", origin, lim.MaxChartSize))
	}
	c, err := loadArchive(data, newBudget(lim))
	if err != nil {
		return nil, as(ErrChartLoad, fmt.Errorf("chart downloaded from %s: %w", origin, err))
	}
	res := &Result{Name: c.Name(), Version: c.Metadata.Version}

	valuesFiles := requestedValuesFiles(opts)
	if len(valuesFiles) == 0 && opts.VersionMetadata == "" {
		// The archive as served: its digest is the one in the index, and nothing is lost (Helm's
		// gzip header, the order and times of its entries, files Save would not write).
		res.Path = filepath.Join(outDir, fmt.Sprintf("%s-%s.tgz", res.Name, res.Version))
		if err := writeFileAtomic(res.Path, data); err != nil {
			return nil, err
		}
		return res, nil
	}

	merged, used, err := mergeChartValues(c, valuesFiles, opts.IgnoreMissingValuesFiles)
	if err != nil {
		return nil, err
	}
	return repackage(c, res, merged, used, opts, outDir, lim)
}

// repackage is the common end of Pull and Package: the merged values (when values files were
// merged) and the version metadata go into the chart, which is written as a package.
func repackage(c *helmchart.Chart, res *Result, merged map[string]any, used []string, opts Options, outDir string, lim Limits) (*Result, error) {
	if len(used) > 0 {
		if err := setValues(c, merged); err != nil {
			return nil, err
		}
		res.ValuesFiles = used
	}
	if err := applyVersionMetadata(c, opts); err != nil {
		return nil, err
	}
	var err error
	if res.Path, err = writePackage(c, outDir, lim); err != nil {
		return nil, err
	}
	res.Version = c.Metadata.Version
	res.Packaged = true
	return res, nil
}

// mergeChartValues merges the values files, paths inside the chart, in order. It returns the
// merge and the files merged; none merged (all missing and ignored) keeps the chart's own
// values.yaml rather than emptying it.
func mergeChartValues(c *helmchart.Chart, files []string, ignoreMissing bool) (map[string]any, []string, error) {
	merged := map[string]any{}
	var used []string
	for _, p := range files {
		name := path.Clean(filepath.ToSlash(p))
		if !fs.ValidPath(name) {
			return nil, nil, errorf(ErrValuesFile, "values file '%s' is not a relative path inside chart '%s'", p, c.Name())
		}
		// Raw holds every file of the chart, templates/ and subcharts' files included, as
		// named in the archive.
		var data []byte
		found := false
		for _, f := range c.Raw {
			if f.Name == name {
				data, found = f.Data, true
				break
			}
		}
		if !found {
			if ignoreMissing {
				continue
			}
			return nil, nil, errorf(ErrValuesFile, "values file '%s' not found in chart '%s'", p, c.Name())
		}
		values, err := parseValues(p, data)
		if err != nil {
			return nil, nil, err
		}
		merged = mergeValues(merged, values)
		used = append(used, p)
	}
	return merged, used, nil
}

// download GETs the archive and checks its size and digest. It returns the URL to show in
// messages (password redacted).
func download(ctx context.Context, ref RemoteReference, lim Limits) ([]byte, string, error) {
	u, err := url.Parse(ref.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ref.URL, errorf(ErrChartPull, "chart URL '%s' is not an absolute http(s) URL", ref.URL)
	}
	shown := u.Redacted()
	want, err := parseDigest(ref.Digest)
	if err != nil {
		return nil, shown, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, shown, errorf(ErrChartPull, "chart URL '%s': %v", shown, err)
	}
	req.Header.Set("User-Agent", userAgent)
	if ref.Username != "" || ref.Password != "" {
		req.SetBasicAuth(ref.Username, ref.Password)
	}
	// A transport per pull: the TLS configuration is the HelmRepository's. Go's client does
	// not forward the Authorization header on a redirect to another host.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if ref.TLS != nil {
		transport.TLSClientConfig = ref.TLS.Clone()
	}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		if ue := new(url.Error); errors.As(err, &ue) {
			ue.URL = shown
		}
		return nil, shown, errorf(ErrChartPull, "chart download failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = "; check the credentials of the HelmRepository (spec.secretRef, spec.passCredentials)"
		case http.StatusNotFound:
			hint = "; the chart may have been removed since the repository index was fetched"
		}
		return nil, shown, errorf(ErrChartPull, "chart download from %s failed: %s%s", shown, resp.Status, hint)
	}
	tooLarge := func() error {
		return as(ErrChartPull, errorf(ErrTooLarge, "chart download from %s is larger than --helm-chart-max-size (%d bytes)", shown, lim.MaxChartSize))
	}
	if resp.ContentLength > lim.MaxChartSize {
		return nil, shown, tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, lim.MaxChartSize+1))
	if err != nil {
		return nil, shown, errorf(ErrChartPull, "chart download from %s failed: %w", shown, err)
	}
	if int64(len(data)) > lim.MaxChartSize {
		return nil, shown, tooLarge()
	}
	if want != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, shown, errorf(ErrChartPull, "chart digest mismatch: index says sha256:%s, downloaded sha256:%s from %s; the repository index is stale or the archive was replaced", want, got, shown)
		}
	}
	return data, shown, nil
}

// parseDigest returns the lower-case hex of a "sha256:<hex>" or "<hex>" digest, "" for none.
func parseDigest(d string) (string, error) {
	if d == "" {
		return "", nil
	}
	h := strings.ToLower(strings.TrimPrefix(d, "sha256:"))
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return "", errorf(ErrChartPull, "chart digest '%s' from the index is not a SHA-256 hex digest", d)
	}
	return h, nil
}
