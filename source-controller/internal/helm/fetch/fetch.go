// Package fetch downloads the index.yaml of a Helm HTTP repository for the HelmRepository
// reconciler: a conditional GET (the ETag and Last-Modified of the stored index), bounded by
// --helm-index-max-size, hashed while it streams to a file, and converted to the compact index
// of package index only when the caller asks (a new digest). What the reconciler stores, and the
// conditions it sets, are its own.
package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

// ErrInvalidURL is wrapped by the errors of a repository URL that is not an http(s) URL: no
// retry can fix it.
var ErrInvalidURL = errors.New("invalid Helm repository URL")

// Validators are the HTTP validators of a downloaded index: sent back, they make the next
// download a conditional GET that an unchanged index answers with 304.
type Validators struct {
	ETag, LastModified string
}

// Request is one download of a repository's index.
type Request struct {
	// URL is the repository's URL; the index is <URL>/index.yaml.
	URL string
	// Username and Password go as basic auth when one of them is set.
	Username, Password string
	// Stored holds the validators of the index stored last; nil when none is stored. Only then
	// is a 304 answer the stored index's confirmation.
	Stored *Validators
	// MaxSize is the most bytes the index may have (--helm-index-max-size).
	MaxSize int64
}

// Index is a downloaded index.
type Index struct {
	// URL is the index's URL.
	URL string
	// NotModified: the server answered 304, the stored index is current; nothing else is set.
	NotModified bool
	// Digest is "sha256:<hex>" of the index as served.
	Digest string
	// Validators are the response's, for the next download.
	Validators Validators

	path    string
	maxSize int64
}

// IndexURL is the URL of the index of the repository at repoURL, which must be http or https.
func IndexURL(repoURL string) (string, error) {
	u, err := url.Parse(repoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", &urlError{fmt.Errorf("URL '%s' is not an http or https URL", repoURL)}
	}
	return strings.TrimSuffix(repoURL, "/") + "/index.yaml", nil
}

// Get downloads the index with client into dir (which the caller removes). A 401 or 403 answer
// is an error for which Unauthorized is true.
func Get(ctx context.Context, client *http.Client, req Request, dir string) (*Index, error) {
	indexURL, err := IndexURL(req.URL)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, indexURL, nil)
	if err != nil {
		return nil, &urlError{err}
	}
	if req.Username != "" || req.Password != "" {
		hreq.SetBasicAuth(req.Username, req.Password)
	}
	if v := req.Stored; v != nil {
		if v.ETag != "" {
			hreq.Header.Set("If-None-Match", v.ETag)
		}
		if v.LastModified != "" {
			hreq.Header.Set("If-Modified-Since", v.LastModified)
		}
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch Helm repository index '%s': %w", indexURL, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && req.Stored != nil:
		return &Index{URL: indexURL, NotModified: true}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, &StatusError{URL: indexURL, Code: resp.StatusCode, Status: resp.Status}
	}

	ix := &Index{
		URL:        indexURL,
		Validators: Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")},
		path:       filepath.Join(dir, "index.yaml"),
		maxSize:    req.MaxSize,
	}
	f, err := os.Create(ix.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hash), io.LimitReader(resp.Body, req.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("failed to fetch Helm repository index '%s': %w", indexURL, err)
	}
	if n > req.MaxSize {
		return nil, fmt.Errorf("Helm repository index '%s' is larger than --helm-index-max-size (%d bytes)", indexURL, req.MaxSize)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	ix.Digest = "sha256:" + hex.EncodeToString(hash.Sum(nil))
	return ix, nil
}

// Compact converts the downloaded index to the compact form that HelmCharts resolve from
// (package index), next to it; the file is returned open at its start, for the caller to close.
func (ix *Index) Compact() (*os.File, index.Stats, error) {
	raw, err := os.Open(ix.path)
	if err != nil {
		return nil, index.Stats{}, err
	}
	defer raw.Close()
	compact, err := os.Create(strings.TrimSuffix(ix.path, ".yaml") + ".idx")
	if err != nil {
		return nil, index.Stats{}, err
	}
	stats, err := index.Convert(raw, compact, ix.maxSize)
	if err != nil {
		compact.Close()
		return nil, index.Stats{}, fmt.Errorf("Helm repository index '%s' is not usable: %w", ix.URL, err)
	}
	if _, err := compact.Seek(0, io.SeekStart); err != nil {
		compact.Close()
		return nil, index.Stats{}, err
	}
	return compact, stats, nil
}

// urlError is an invalid repository URL; its message is the cause's.
type urlError struct{ err error }

func (e *urlError) Error() string   { return e.err.Error() }
func (e *urlError) Unwrap() []error { return []error{ErrInvalidURL, e.err} }

// StatusError is an answer other than 200 (or 304 to a conditional request).
type StatusError struct {
	URL    string
	Code   int
	Status string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("failed to fetch Helm repository index '%s': %s", e.URL, e.Status)
}

// Unauthorized says that err is the repository refusing the credentials (401 or 403).
func Unauthorized(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden)
}
