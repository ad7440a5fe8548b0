// Package bucket reads S3-compatible object storage for the Bucket kind with minio-go, the
// client of Flux's generic provider: list the objects under a prefix, stat and download them.
package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Options say how to reach the object storage.
type Options struct {
	// Endpoint is host[:port], without scheme.
	Endpoint string
	// Insecure speaks plain HTTP.
	Insecure bool
	// Region of the endpoint; empty asks the server for the bucket's location.
	Region string
	// AccessKey and SecretKey are static keys; empty means anonymous requests.
	AccessKey, SecretKey string
	// Transport carries the requests (the TLS settings and proxy of the Bucket's Secrets); nil
	// is the default, with the environment's proxy (HTTPS_PROXY, NO_PROXY).
	Transport http.RoundTripper
}

// Object is a listed object.
type Object struct {
	Key string
	// ETag as the server gives it, without quotes (the MD5 of the content for a single-part
	// upload).
	ETag string
	Size int64
}

// Client reads the objects of buckets at one endpoint.
type Client struct {
	c *minio.Client
}

// New returns a client for opts. It fails only on an endpoint that does not parse.
func New(opts Options) (*Client, error) {
	tr := opts.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	mo := &minio.Options{Secure: !opts.Insecure, Region: opts.Region, Transport: tr}
	if opts.AccessKey != "" || opts.SecretKey != "" {
		mo.Creds = credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, "")
	}
	c, err := minio.New(opts.Endpoint, mo)
	if err != nil {
		return nil, fmt.Errorf("endpoint '%s': %w", opts.Endpoint, err)
	}
	return &Client{c: c}, nil
}

// BucketExists reports whether the bucket exists.
func (c *Client) BucketExists(ctx context.Context, bucket string) (bool, error) {
	return c.c.BucketExists(ctx, bucket)
}

// List calls visit for every object whose key starts with prefix, in key order (ListObjectsV2).
func (c *Client) List(ctx context.Context, bucket, prefix string, visit func(Object) error) error {
	ctx, cancel := context.WithCancel(ctx) // stops the listing when visit fails
	defer cancel()
	for o := range c.c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		if err := visit(Object{Key: o.Key, ETag: o.ETag, Size: o.Size}); err != nil {
			return err
		}
	}
	return nil
}

// Stat returns the object at key, with an error that IsNotFound recognises when there is none.
func (c *Client) Stat(ctx context.Context, bucket, key string) (Object, error) {
	info, err := c.c.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, err
	}
	return Object{Key: info.Key, ETag: info.ETag, Size: info.Size}, nil
}

// Get downloads the object at key into w and returns it as the download found it (its ETag may
// be newer than the listing's).
func (c *Client) Get(ctx context.Context, bucket, key string, w io.Writer) (Object, error) {
	obj, err := c.c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return Object{}, err
	}
	defer obj.Close()
	info, err := obj.Stat() // sends the GET
	if err != nil {
		return Object{}, err
	}
	if _, err := io.Copy(w, obj); err != nil {
		return Object{}, err
	}
	return Object{Key: key, ETag: info.ETag, Size: info.Size}, nil
}

// IsNotFound reports whether err says that the object (or the bucket) does not exist.
func IsNotFound(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	return resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound
}
