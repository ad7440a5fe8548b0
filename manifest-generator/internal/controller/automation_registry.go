package controller

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
)

// registries is how one scan of a generation reaches the registries: TLS and plain HTTP from
// spec.automation, credentials from its secretRef and from each workload's imagePullSecrets.
type registries struct {
	insecure  bool
	transport http.RoundTripper
	// secrets are the data of spec.automation.secretRef (nil without one).
	secrets []map[string][]byte
	// err is why the automation's own Secrets could not be read: every lookup fails with it.
	err error
	// pullSecrets reads a workload's imagePullSecrets as the generation's account.
	pullSecrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// registries reads what the scans of obj need once per scan.
func (r *ManifestGenerationReconciler) registries(ctx context.Context, obj *generatorv1.ManifestGeneration) registries {
	spec := obj.Spec.Automation
	regs := registries{insecure: spec.Insecure}
	if spec.SecretRef != nil {
		s, err := r.automationSecret(ctx, obj.Namespace, spec.SecretRef.Name)
		if err == nil && len(s.Data[corev1.DockerConfigJsonKey]) == 0 {
			err = fmt.Errorf("secret '%s/%s' has no %s", obj.Namespace, spec.SecretRef.Name, corev1.DockerConfigJsonKey)
		}
		if err != nil {
			regs.err = err
			return regs
		}
		regs.secrets = append(regs.secrets, s.Data)
	}
	if spec.CertSecretRef != nil {
		s, err := r.automationSecret(ctx, obj.Namespace, spec.CertSecretRef.Name)
		if err == nil && len(s.Data["ca.crt"]) == 0 {
			err = fmt.Errorf("secret '%s/%s' has no ca.crt", obj.Namespace, spec.CertSecretRef.Name)
		}
		if err != nil {
			regs.err = err
			return regs
		}
		t, err := r.caTransport(s.Data["ca.crt"])
		if err != nil {
			regs.err = fmt.Errorf("secret '%s/%s': %w", obj.Namespace, spec.CertSecretRef.Name, err)
			return regs
		}
		regs.transport = t
	}
	cl, err := r.Clients.For(obj.Namespace, obj.Spec.ServiceAccountName)
	if err != nil {
		regs.err = err
		return regs
	}
	// Workloads share pull secrets: each is read once per scan.
	type read struct {
		data map[string][]byte
		err  error
	}
	seen := map[client.ObjectKey]read{}
	regs.pullSecrets = func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
		key := client.ObjectKey{Namespace: namespace, Name: name}
		if r, ok := seen[key]; ok {
			return r.data, r.err
		}
		s := &corev1.Secret{}
		err := cl.Get(ctx, key, s)
		seen[key] = read{data: s.Data, err: err}
		return s.Data, err
	}
	return regs
}

// caTransport is the transport that trusts the CA bundle ca: one per bundle, kept, as the
// scanner keeps its registry sessions per transport.
func (r *ManifestGenerationReconciler) caTransport(ca []byte) (http.RoundTripper, error) {
	key := sha256.Sum256(ca)
	if t, ok := r.transports.Load(key); ok {
		return t.(http.RoundTripper), nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("ca.crt holds no PEM certificate")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	actual, _ := r.transports.LoadOrStore(key, http.RoundTripper(t))
	return actual.(http.RoundTripper), nil
}

// automationSecret reads a Secret of the generation's namespace, uncached: the controller does
// not watch Secrets.
func (r *ManifestGenerationReconciler) automationSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading secret '%s/%s': %w", namespace, name, err)
	}
	return s, nil
}

func (g registries) nameOptions() []name.Option {
	if g.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// options are the scanner options of one container: the automation's credentials, then those of
// the workload's imagePullSecrets that its account can read (a pull secret that cannot be read
// is skipped, as the kubelet does: a public image needs none).
func (g registries) options(ctx context.Context, c automatedContainer) (imagescan.Options, error) {
	if g.err != nil {
		return imagescan.Options{}, g.err
	}
	secrets := g.secrets
	for _, s := range c.pullSecrets {
		data, err := g.pullSecrets(ctx, c.ref.Namespace, s)
		if err != nil {
			log.FromContext(ctx).V(1).Info("imagePullSecret skipped", "workload", c.ref.String(), "secret", s, "error", err.Error())
			continue
		}
		secrets = append(secrets, data)
	}
	keychain, err := imagescan.KeychainFromSecrets(secrets...)
	if err != nil {
		return imagescan.Options{}, err
	}
	return imagescan.Options{Keychain: keychain, Insecure: g.insecure, Transport: g.transport}, nil
}
