package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options say where the shared store is (the --storage-s3-* flags and the Secret of
// --storage-s3-secret-ref).
type S3Options struct {
	// Endpoint is host[:port], without scheme.
	Endpoint string
	// Bucket holds the artifacts, under Prefix (no leading or trailing slash; empty for the
	// bucket's root).
	Bucket, Prefix string
	// Region of the endpoint; empty asks the server.
	Region string
	// Insecure speaks plain HTTP.
	Insecure bool
	// AccessKey and SecretKey are static keys (the Secret's `accesskey` and `secretkey`, as a
	// Bucket source's).
	AccessKey, SecretKey string
}

// The user metadata of the store's objects.
const (
	digestMeta = "Sluice-Digest"
	linkMeta   = "Sluice-Link"
)

// s3Remote is a Remote in an S3-compatible bucket, through minio-go.
type s3Remote struct {
	c              *minio.Client
	bucket, prefix string
}

// NewS3 returns the Remote of opts and checks that the bucket is there, so that a wrong
// endpoint, key or bucket stops the controller at its start rather than at its first artifact.
func NewS3(ctx context.Context, opts S3Options) (Remote, error) {
	mo := &minio.Options{Secure: !opts.Insecure, Region: opts.Region,
		Transport: http.DefaultTransport.(*http.Transport).Clone()}
	if opts.AccessKey != "" || opts.SecretKey != "" {
		mo.Creds = credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, "")
	}
	c, err := minio.New(opts.Endpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("artifact store endpoint '%s': %w", opts.Endpoint, err)
	}
	ok, err := c.BucketExists(ctx, opts.Bucket)
	if err != nil {
		return nil, fmt.Errorf("artifact store bucket '%s' at %s: %w", opts.Bucket, opts.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("artifact store bucket '%s' does not exist at %s", opts.Bucket, opts.Endpoint)
	}
	return &s3Remote{c: c, bucket: opts.Bucket, prefix: strings.Trim(opts.Prefix, "/")}, nil
}

func (r *s3Remote) key(name string) string {
	if r.prefix == "" {
		return name
	}
	return r.prefix + "/" + name
}

func (r *s3Remote) Put(ctx context.Context, name string, f *os.File, size int64, digest string) error {
	_, err := r.c.PutObject(ctx, r.bucket, r.key(name), f, size, minio.PutObjectOptions{
		UserMetadata: map[string]string{digestMeta: digest}, ContentType: contentType(name),
		// One request for what fits: artifacts are written whole, and a part size bounds the
		// memory of a larger upload.
		PartSize: 16 << 20,
	})
	if err != nil {
		return fmt.Errorf("uploading '%s' to the artifact store: %w", name, err)
	}
	return nil
}

func (r *s3Remote) PutLink(ctx context.Context, name, target string) error {
	_, err := r.c.PutObject(ctx, r.bucket, r.key(name), strings.NewReader(""), 0, minio.PutObjectOptions{
		UserMetadata: map[string]string{linkMeta: target},
	})
	if err != nil {
		return fmt.Errorf("uploading the link '%s' to the artifact store: %w", name, err)
	}
	return nil
}

func (r *s3Remote) Open(ctx context.Context, name string) (RemoteObject, error) {
	info, err := r.stat(ctx, name)
	if err != nil {
		return nil, err
	}
	if info.Link != "" {
		// A link names an object of its own directory only: it cannot lead elsewhere.
		if strings.ContainsAny(info.Link, "/\\") || info.Link == "." || info.Link == ".." {
			return nil, fmt.Errorf("link '%s' of the artifact store: %w", name, fs.ErrNotExist)
		}
		if info, err = r.stat(ctx, path.Join(path.Dir(name), info.Link)); err != nil {
			return nil, err
		}
		if info.Link != "" {
			return nil, fmt.Errorf("link '%s' of the artifact store leads to a link: %w", name, fs.ErrNotExist)
		}
	}
	obj, err := r.c.GetObject(ctx, r.bucket, r.key(info.Name), minio.GetObjectOptions{})
	if err != nil {
		return nil, r.notFound(info.Name, err)
	}
	return &s3Object{Object: obj, info: info}, nil
}

func (r *s3Remote) stat(ctx context.Context, name string) (RemoteInfo, error) {
	oi, err := r.c.StatObject(ctx, r.bucket, r.key(name), minio.StatObjectOptions{})
	if err != nil {
		return RemoteInfo{}, r.notFound(name, err)
	}
	return RemoteInfo{Name: name, Size: oi.Size, ModTime: oi.LastModified,
		Digest: oi.UserMetadata[digestMeta], Link: oi.UserMetadata[linkMeta]}, nil
}

func (r *s3Remote) List(ctx context.Context, dir string) ([]RemoteInfo, error) {
	prefix := r.key(strings.Trim(dir, "/")) + "/"
	var out []RemoteInfo
	for oi := range r.c.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("listing '%s' in the artifact store: %w", dir, oi.Err)
		}
		if strings.HasSuffix(oi.Key, "/") {
			continue // a common prefix: a directory below
		}
		out = append(out, RemoteInfo{Name: strings.TrimPrefix(oi.Key, r.key("")), Size: oi.Size, ModTime: oi.LastModified})
	}
	return out, nil
}

func (r *s3Remote) Delete(ctx context.Context, name string) error {
	if err := r.c.RemoveObject(ctx, r.bucket, r.key(name), minio.RemoveObjectOptions{}); err != nil && !isNoSuchKey(err) {
		return fmt.Errorf("deleting '%s' from the artifact store: %w", name, err)
	}
	return nil
}

func (r *s3Remote) notFound(name string, err error) error {
	if isNoSuchKey(err) {
		return fmt.Errorf("'%s' in the artifact store: %w", name, fs.ErrNotExist)
	}
	return fmt.Errorf("'%s' in the artifact store: %w", name, err)
}

func isNoSuchKey(err error) bool {
	var resp minio.ErrorResponse
	return errors.As(err, &resp) && (resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound)
}

// s3Object is an opened object of the store; minio-go's Object reads the bytes a Seek asks for
// with a ranged request.
type s3Object struct {
	*minio.Object
	info RemoteInfo
}

func (o *s3Object) Info() RemoteInfo { return o.info }

// contentType is what the artifact server answers for name.
func contentType(name string) string {
	if strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz") {
		return "application/gzip"
	}
	return "application/octet-stream"
}
