package controller

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/helm/index"
)

// Artifact metadata keys of a HelmRepository: the validators of the index download, so the next
// check is a conditional GET that an unchanged index answers with 304.
const (
	metaETag         = "etag"
	metaLastModified = "last-modified"
)

// reconcileIndex downloads index.yaml when it changed, converts it to the compact index and
// stores that as the artifact. The previous artifact stays on any failure.
func (r *HelmRepositoryReconciler) reconcileIndex(ctx context.Context, obj *sourcev1.HelmRepository) error {
	u, err := url.Parse(obj.Spec.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return r.fetchFailed(obj, sourcev1.URLInvalidReason,
			reconcile.TerminalError(fmt.Errorf("URL '%s' is not an http or https URL", obj.Spec.URL)))
	}
	httpClient, user, pass, err := r.httpClient(ctx, obj)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason, err)
	}
	timeout := defaultGitTimeout
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	indexURL := strings.TrimSuffix(obj.Spec.URL, "/") + "/index.yaml"
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, indexURL, nil)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.URLInvalidReason, reconcile.TerminalError(err))
	}
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	prev := obj.Status.Artifact
	if prev != nil {
		if v := prev.Metadata[metaETag]; v != "" {
			req.Header.Set("If-None-Match", v)
		}
		if v := prev.Metadata[metaLastModified]; v != "" {
			req.Header.Set("If-Modified-Since", v)
		}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, fmt.Errorf("failed to fetch Helm repository index '%s': %w", indexURL, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && prev != nil:
		return r.upToDate(ctx, obj)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return r.fetchFailed(obj, sourcev1.AuthenticationFailedReason,
			fmt.Errorf("failed to fetch Helm repository index '%s': %s", indexURL, resp.Status))
	case resp.StatusCode != http.StatusOK:
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason,
			fmt.Errorf("failed to fetch Helm repository index '%s': %s", indexURL, resp.Status))
	}

	raw, err := os.CreateTemp("", "index-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(raw.Name())
	defer raw.Close()
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(raw, hash), io.LimitReader(resp.Body, r.MaxIndexSize+1))
	if err != nil {
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, fmt.Errorf("failed to fetch Helm repository index '%s': %w", indexURL, err))
	}
	if n > r.MaxIndexSize {
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, fmt.Errorf(
			"Helm repository index '%s' is larger than --helm-index-max-size (%d bytes)", indexURL, r.MaxIndexSize))
	}
	revision := "sha256:" + hex.EncodeToString(hash.Sum(nil))
	validators := map[string]string{metaETag: resp.Header.Get("ETag"), metaLastModified: resp.Header.Get("Last-Modified")}
	if prev != nil && prev.Revision == revision {
		prev.Metadata = validators
		return r.upToDate(ctx, obj)
	}
	msg := fmt.Sprintf("new index revision '%s'", revision)
	conditions.MarkTrue(obj, sourcev1.ArtifactOutdatedCondition, sourcev1.NewRevisionReason, "%s", msg)
	conditions.MarkReconciling(obj, meta.ProgressingReason, "building artifact: %s", msg)

	if _, err := raw.Seek(0, io.SeekStart); err != nil {
		return err
	}
	compact, err := os.CreateTemp("", "index-*.idx")
	if err != nil {
		return err
	}
	defer os.Remove(compact.Name())
	defer compact.Close()
	stats, err := index.Convert(raw, compact, r.MaxIndexSize)
	if err != nil {
		return r.fetchFailed(obj, sourcev1.IndexationFailedReason, fmt.Errorf("Helm repository index '%s' is not usable: %w", indexURL, err))
	}
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	if _, err := compact.Seek(0, io.SeekStart); err != nil {
		return err
	}
	art := r.Storage.NewArtifactFor(sourcev1.HelmRepositoryKind, obj, revision, "index-"+strings.TrimPrefix(revision, "sha256:")[:16]+".idx")
	art.Metadata = validators
	if err := r.Storage.Copy(&art, compact); err != nil {
		return r.storageFailed(obj, sourcev1.ArchiveOperationFailedReason, fmt.Errorf("storing the index: %w", err))
	}
	link, err := r.storeArtifact(obj, art, "index.idx",
		fmt.Sprintf("stored fetched index of %d charts and %d versions", stats.Charts, stats.Versions))
	if err != nil {
		return err
	}
	obj.Status.URL = link
	return nil
}

func (r *HelmRepositoryReconciler) upToDate(ctx context.Context, obj *sourcev1.HelmRepository) error {
	conditions.Delete(obj, sourcev1.FetchFailedCondition)
	conditions.Delete(obj, sourcev1.ArtifactOutdatedCondition)
	log.FromContext(ctx).Info(fmt.Sprintf("artifact up-to-date with remote revision: '%s'", obj.Status.Artifact.Revision))
	return nil
}

// httpClient builds the client of spec.certSecretRef and the basic credentials of spec.secretRef.
func (r *HelmRepositoryReconciler) httpClient(ctx context.Context, obj *sourcev1.HelmRepository) (*http.Client, string, string, error) {
	var user, pass string
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return nil, "", "", err
		}
		user, pass = string(data["username"]), string(data["password"])
		if user == "" || pass == "" {
			return nil, "", "", fmt.Errorf("secret '%s/%s' needs both 'username' and 'password'", obj.Namespace, ref.Name)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if ref := obj.Spec.CertSecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return nil, "", "", err
		}
		cfg, err := tlsConfig(data)
		if err != nil {
			return nil, "", "", fmt.Errorf("secret '%s/%s': %w", obj.Namespace, ref.Name, err)
		}
		transport.TLSClientConfig = cfg
	}
	return &http.Client{Transport: transport, Timeout: 5 * time.Minute}, user, pass, nil
}

func (r *SourceReconciler) secretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("failed to get secret '%s/%s': %w", namespace, name, err)
	}
	return secret.Data, nil
}

// tlsConfig reads `ca.crt`, and `tls.crt` with `tls.key`, from a Secret's data.
func tlsConfig(data map[string][]byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := data["ca.crt"]; len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("'ca.crt' holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	crt, key := data["tls.crt"], data["tls.key"]
	if len(crt) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("'tls.crt' and 'tls.key' are not a key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
