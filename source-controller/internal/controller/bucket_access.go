package controller

import (
	"context"
	"errors"
	"fmt"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/bucket"
)

// needsCloudIdentity says why a Bucket cannot be served: what it asks for needs a cloud
// identity (instance metadata, workload identity, a token service or the cloud's own APIs), which
// this controller does not support offline. nil when static keys (or none) reach the endpoint:
// the generic provider, and aws with spec.secretRef.
func needsCloudIdentity(obj *sourcev1.Bucket) error {
	const why = "which this controller does not support offline: use the 'generic' provider (or 'aws' with spec.secretRef) with static keys"
	switch p := obj.Spec.Provider; {
	case p == sourcev1.BucketProviderGoogle || p == sourcev1.BucketProviderAzure:
		return fmt.Errorf("the '%s' provider needs cloud identity, %s", p, why)
	case obj.Spec.STS != nil:
		return fmt.Errorf("spec.sts (a '%s' Security Token Service) needs cloud identity, %s", obj.Spec.STS.Provider, why)
	case obj.Spec.ServiceAccountName != "":
		return fmt.Errorf("spec.serviceAccountName needs cloud identity (workload identity), %s", why)
	case p == sourcev1.BucketProviderAmazon && obj.Spec.SecretRef == nil:
		return fmt.Errorf("the 'aws' provider without spec.secretRef needs cloud identity (instance or workload identity), %s", why)
	}
	return nil
}

// errEndpointInvalid is wrapped by the error of an endpoint that does not parse.
var errEndpointInvalid = errors.New("invalid endpoint")

// bucketClient makes the client of a Bucket from its spec and Secrets: static keys
// (spec.secretRef: accesskey, secretkey), TLS (spec.certSecretRef: ca.crt, tls.crt, tls.key) and
// proxy (spec.proxySecretRef: address, username, password).
func (r *SourceReconciler) bucketClient(ctx context.Context, obj *sourcev1.Bucket) (*bucket.Client, error) {
	opts := bucket.Options{Endpoint: obj.Spec.Endpoint, Insecure: obj.Spec.Insecure, Region: obj.Spec.Region}
	if ref := obj.Spec.SecretRef; ref != nil {
		data, err := r.secretData(ctx, obj.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		opts.AccessKey, opts.SecretKey = string(data["accesskey"]), string(data["secretkey"])
		if opts.AccessKey == "" || opts.SecretKey == "" {
			return nil, fmt.Errorf("secret '%s/%s' needs both 'accesskey' and 'secretkey'", obj.Namespace, ref.Name)
		}
	}
	if obj.Spec.CertSecretRef != nil || obj.Spec.ProxySecretRef != nil {
		t, err := r.secretTransport(ctx, obj.Namespace, obj.Spec.CertSecretRef, obj.Spec.ProxySecretRef)
		if err != nil {
			return nil, err
		}
		opts.Transport = t
	}
	c, err := bucket.New(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errEndpointInvalid, err)
	}
	return c, nil
}
