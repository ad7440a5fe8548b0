package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Fetcher downloads artifacts from the source-controller's artifact server.
type Fetcher struct {
	// Client is the HTTP client to use; nil means a client with default timeouts.
	Client *http.Client
	// Retries is the number of retries after a failed request or a 5xx answer (default 3).
	Retries int
	// MaxDownloadSize bounds the size of the downloaded archive (default 512 MiB).
	MaxDownloadSize int64
	// Limits bound the extracted content.
	Limits Limits
}

const defaultMaxDownloadSize = 512 << 20

// Fetch downloads url, verifies it against digest (`sha256:...`, `sha384:...` or `sha512:...`)
// and extracts it into dir, which must not exist or be empty. The archive is extracted into a
// staging directory beside dir and renamed into place only when all of it verified and extracted,
// so a refused artifact leaves nothing behind and never a half-written dir.
func (f *Fetcher) Fetch(ctx context.Context, url, digest, dir string) error {
	return redactURL(f.fetch(ctx, url, digest, dir), url)
}

func (f *Fetcher) fetch(ctx context.Context, url, digest, dir string) error {
	tmp, err := os.CreateTemp("", "artifact-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	if err := f.download(ctx, url, digest, tmp); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".artifact-*")
	if err != nil {
		return err
	}
	if err := Extract(tmp, stage, f.Limits); err != nil {
		_ = os.RemoveAll(stage)
		return fmt.Errorf("artifact '%s': %w", url, err)
	}
	// os.Remove only removes an empty dir: a non-empty one is refused, never overwritten.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.RemoveAll(stage)
		return fmt.Errorf("placing artifact '%s': %s must be empty: %w", url, dir, err)
	}
	if err := os.Rename(stage, dir); err != nil {
		_ = os.RemoveAll(stage)
		return fmt.Errorf("placing artifact '%s' into %s: %w", url, dir, err)
	}
	return nil
}

// Download writes the artifact at url into w and verifies its digest and size.
func (f *Fetcher) Download(ctx context.Context, url, digest string, w io.Writer) error {
	return redactURL(f.download(ctx, url, digest, w), url)
}

func (f *Fetcher) download(ctx context.Context, url, digest string, w io.Writer) error {
	want, err := ParseDigest(digest)
	if err != nil {
		return err
	}
	maxSize := f.MaxDownloadSize
	if maxSize <= 0 {
		maxSize = defaultMaxDownloadSize
	}

	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("artifact URL '%s': %w", url, err)
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return fmt.Errorf("downloading artifact '%s': %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("downloading artifact '%s': server answered %s", url, resp.Status)
	}
	if resp.ContentLength > maxSize {
		return fmt.Errorf("%w: '%s' is %d bytes, the limit is %d", ErrTooLarge, url, resp.ContentLength, maxSize)
	}

	digester := want.Algorithm().Digester()
	n, err := io.Copy(io.MultiWriter(w, digester.Hash()), io.LimitReader(resp.Body, maxSize+1))
	if err != nil {
		return fmt.Errorf("downloading artifact '%s': %w", url, err)
	}
	if n > maxSize {
		return fmt.Errorf("%w: '%s' is over the limit of %d bytes", ErrTooLarge, url, maxSize)
	}
	if got := digester.Digest(); got != want {
		return fmt.Errorf("%w: '%s' has digest '%s', status.artifact.digest is '%s'", ErrDigestMismatch, url, got, want)
	}
	return nil
}

func (f *Fetcher) client() *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = f.Retries
	if c.RetryMax <= 0 {
		c.RetryMax = 3
	}
	c.RetryWaitMin = 200 * time.Millisecond
	c.RetryWaitMax = 2 * time.Second
	if f.Client != nil {
		c.HTTPClient = f.Client
	} else {
		c.HTTPClient.Timeout = 5 * time.Minute
	}
	return c
}
