package storage

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/secrets"
)

// RemoteFlags are the flags of the shared store.
type RemoteFlags struct {
	// Backend is --storage-backend: "local" (the default: one replica, artifacts on its disk)
	// or "s3".
	Backend string
	S3      S3Options
	// SecretName is --storage-s3-secret-ref: a Secret of the controller's namespace with the
	// store's `accesskey` and `secretkey`.
	SecretName string
}

// BindFlags registers the flags on fs.
func (f *RemoteFlags) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Backend, "storage-backend", "local",
		"Where artifacts are kept: local (on --storage-path, served by one replica) or s3 (also uploaded to an S3-compatible bucket, so that every replica serves every artifact).")
	fs.StringVar(&f.S3.Endpoint, "storage-s3-endpoint", "", "With --storage-backend=s3: the store's host[:port].")
	fs.StringVar(&f.S3.Bucket, "storage-s3-bucket", "", "With --storage-backend=s3: the bucket of the artifacts (it must exist).")
	fs.StringVar(&f.S3.Prefix, "storage-s3-prefix", "", "With --storage-backend=s3: a prefix of the artifacts' keys in the bucket.")
	fs.StringVar(&f.S3.Region, "storage-s3-region", "", "With --storage-backend=s3: the store's region; empty asks the store.")
	fs.BoolVar(&f.S3.Insecure, "storage-s3-insecure", false, "With --storage-backend=s3: speak plain HTTP to the store.")
	fs.StringVar(&f.SecretName, "storage-s3-secret-ref", "",
		"With --storage-backend=s3: a Secret of the controller's namespace holding the store's `accesskey` and `secretkey`.")
}

// Remote returns the store of the flags, nil for the local backend; the Secret is read with
// reader from namespace.
func (f *RemoteFlags) Remote(ctx context.Context, reader client.Reader, namespace string) (Remote, error) {
	switch f.Backend {
	case "", "local":
		return nil, nil
	case "s3":
	default:
		return nil, fmt.Errorf("--storage-backend=%s: must be local or s3", f.Backend)
	}
	if f.S3.Endpoint == "" || f.S3.Bucket == "" {
		return nil, fmt.Errorf("--storage-backend=s3 needs --storage-s3-endpoint and --storage-s3-bucket")
	}
	opts := f.S3
	if f.SecretName != "" {
		data, err := secrets.Data(ctx, reader, namespace, f.SecretName)
		if err != nil {
			return nil, fmt.Errorf("--storage-s3-secret-ref: %w", err)
		}
		opts.AccessKey, opts.SecretKey = string(data["accesskey"]), string(data["secretkey"])
		if opts.AccessKey == "" || opts.SecretKey == "" {
			return nil, fmt.Errorf("--storage-s3-secret-ref: secret '%s/%s' must hold 'accesskey' and 'secretkey'", namespace, f.SecretName)
		}
	}
	return NewS3(ctx, opts)
}
