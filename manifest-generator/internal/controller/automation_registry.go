package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluice-gitops/sluice/shared/secrets"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
)

// registries is how one scan of a generation reaches the registries: TLS and plain HTTP from
// spec.automation, credentials from its secretRef and from each workload's imagePullSecrets.
type registries struct {
	insecure  bool
	transport http.RoundTripper
	// notBefore makes the scan list the tags afresh (a reconcile request).
	notBefore time.Time
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
	if ref := spec.SecretRef; ref != nil {
		data, err := secrets.Data(ctx, r.Client, obj.Namespace, ref.Name)
		if err == nil {
			// Checked once here, so that a Secret that is not a docker config says so.
			if err = (&secrets.Registries{}).Add(data); err != nil {
				err = fmt.Errorf("secret '%s/%s': %w", obj.Namespace, ref.Name, err)
			}
		}
		if err != nil {
			regs.err = err
			return regs
		}
		regs.secrets = append(regs.secrets, data)
	}
	if ref := spec.CertSecretRef; ref != nil {
		data, err := secrets.Data(ctx, r.Client, obj.Namespace, ref.Name)
		if err != nil {
			regs.err = err
			return regs
		}
		t, err := r.tlsTransport(ctx, obj.Namespace, ref.Name, data)
		if err != nil {
			regs.err = err
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
		data, err := secrets.Data(ctx, cl, namespace, name)
		seen[key] = read{data: data, err: err}
		return data, err
	}
	return regs
}

// tlsTransport is the transport with the TLS settings of the certSecretRef namespace/name: one
// per content of the Secret, kept, as the scanner keeps its registry sessions per transport.
func (r *ManifestGenerationReconciler) tlsTransport(ctx context.Context, namespace, name string, data map[string][]byte) (http.RoundTripper, error) {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	if t, ok := r.transports.Load(key); ok {
		return t.(http.RoundTripper), nil
	}
	t, err := secrets.Transport(ctx, namespace, name, data)
	if err != nil {
		return nil, err
	}
	actual, _ := r.transports.LoadOrStore(key, http.RoundTripper(t))
	return actual.(http.RoundTripper), nil
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
	pullSecrets := g.secrets
	for _, s := range c.pullSecrets {
		data, err := g.pullSecrets(ctx, c.ref.Namespace, s)
		if err != nil {
			log.FromContext(ctx).V(1).Info("imagePullSecret skipped", "workload", c.ref.String(), "secret", s, "error", err.Error())
			continue
		}
		pullSecrets = append(pullSecrets, data)
	}
	keychain := &secrets.Registries{}
	for i, data := range pullSecrets {
		if err := keychain.Add(data); err != nil {
			return imagescan.Options{}, fmt.Errorf("image pull secret %d: %w", i+1, err)
		}
	}
	return imagescan.Options{Keychain: keychain, Insecure: g.insecure, Transport: g.transport, NotBefore: g.notBefore}, nil
}
