package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/bucket"
	"github.com/sluice-gitops/sluice/source-controller/internal/sizelimit"
	"github.com/sluice-gitops/sluice/source-controller/internal/storage"
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

// bucketTimeout is spec.timeout (60s when unset).
func bucketTimeout(obj *sourcev1.Bucket) time.Duration {
	if obj.Spec.Timeout != nil {
		return obj.Spec.Timeout.Duration
	}
	return defaultTimeout
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

// bucketIndex is what a Bucket's artifact is made of: the objects kept after the ignore rules, by
// key.
type bucketIndex map[string]bucket.Object

// revision is Flux's revision of a bucket: the digest, with alg, of the index written as one
// "<key> <etag>\n" line per object in key order. The same bucket gets the same revision in Flux.
func (ix bucketIndex) revision(alg digest.Algorithm) string {
	keys := make([]string, 0, len(ix))
	for k := range ix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := alg.Digester()
	for _, k := range keys {
		fmt.Fprintf(d.Hash(), "%s %s\n", k, ix[k].ETag)
	}
	return d.Digest().String()
}

// size is the sum of the listed sizes of the objects.
func (ix bucketIndex) size() int64 {
	var n int64
	for _, o := range ix {
		n += o.Size
	}
	return n
}

// listIndex lists the objects under spec.prefix and keeps those that the ignore rules let
// through, as Flux does: the patterns of the bucket's root .sourceignore object, then
// spec.ignore; "directory" keys (ending in /) and the .sourceignore object itself are left out.
func (r *BucketReconciler) listIndex(ctx context.Context, c *bucket.Client, obj *sourcev1.Bucket) (bucketIndex, error) {
	name := obj.Spec.BucketName
	exists, err := c.BucketExists(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("checking that bucket '%s' exists: %w", name, err)
	}
	if !exists {
		return nil, fmt.Errorf("bucket '%s' not found", name)
	}
	content, err := r.ignoreFiles.read(ctx, c, obj)
	if err != nil {
		return nil, err
	}
	patterns := sourceignore.ReadPatterns(bytes.NewReader(content), nil)
	if obj.Spec.Ignore != nil {
		patterns = append(patterns, sourceignore.ReadPatterns(strings.NewReader(*obj.Spec.Ignore), nil)...)
	}
	matcher := sourceignore.NewMatcher(patterns)
	ix := bucketIndex{}
	var bad []error
	err = c.List(ctx, name, obj.Spec.Prefix, func(o bucket.Object) error {
		if strings.HasSuffix(o.Key, "/") || o.Key == sourceignore.IgnoreFile || matcher.Match(strings.Split(o.Key, "/"), false) {
			return nil
		}
		if err := objectKeyError(o.Key); err != nil {
			bad = append(bad, err)
			return nil
		}
		ix[o.Key] = o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the objects of bucket '%s': %w", name, err)
	}
	bad = append(bad, ix.dirConflicts()...)
	if len(bad) > 0 {
		more := ""
		if len(bad) > 1 {
			more = fmt.Sprintf(" (and %d more object keys that cannot be paths)", len(bad)-1)
		}
		return nil, fmt.Errorf("bucket '%s': %w%s: rename or delete the object, or leave it out with spec.ignore or spec.prefix",
			name, bad[0], more)
	}
	return ix, nil
}

// maxNameLength is the longest file name (one path component) Linux file systems take.
const maxNameLength = 255

// objectKeyError says why an object's key cannot be the path of its file in the artifact (nil
// when it can): the artifact holds each object at its key, so the key must be a relative path of
// names that are neither empty, "." nor "..", nor longer than a file name may be, without NUL.
// Flux's source-controller once wrote objects whose key climbed out of its working directory
// (CVE-2026-47680); fetchObjects also writes through an os.Root, and this check makes the
// refusal say which key and what to do. Backslashes are ordinary characters of a file name here.
func objectKeyError(key string) error {
	fail := func(why string, args ...any) error {
		return fmt.Errorf("object key %s %s", quoteKey(key), fmt.Sprintf(why, args...))
	}
	switch clean := path.Clean(key); {
	case key == "":
		return errors.New("an object key is empty")
	case strings.IndexByte(key, 0) >= 0:
		return fail("holds a NUL byte")
	case strings.HasPrefix(key, "/"):
		return fail("is an absolute path")
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return fail("climbs out of the artifact with '..'")
	}
	for c := range strings.SplitSeq(key, "/") {
		switch {
		case c == "." || c == "..":
			return fail("has a '%s' component", c)
		case c == "":
			return fail("has an empty name between two '/'")
		case len(c) > maxNameLength:
			return fail("has a name of %d bytes, longer than the %d a file name may have", len(c), maxNameLength)
		}
	}
	return nil
}

// dirConflicts are the errors of keys that are also the directory of another key ("a" beside
// "a/b"): the artifact cannot hold both a file and a directory at one path.
func (ix bucketIndex) dirConflicts() []error {
	keys := make([]string, 0, len(ix))
	for k := range ix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		for d := path.Dir(k); d != "."; d = path.Dir(d) {
			if _, ok := ix[d]; ok {
				errs = append(errs, fmt.Errorf("object key %s is also the directory of %s", quoteKey(d), quoteKey(k)))
				break
			}
		}
	}
	return errs
}

// quoteKey is a key as messages show it: quoted, control characters escaped, and cut to its
// first 64 bytes when it is longer than 128.
func quoteKey(key string) string {
	const show, most = 64, 128
	k, suffix := key, ""
	if len(k) > most {
		k, suffix = strings.ToValidUTF8(k[:show], ""), fmt.Sprintf("...' (%d bytes)", len(key))
	}
	if strings.IndexFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		q := strconv.Quote(k)
		k = q[1 : len(q)-1]
	}
	if suffix == "" {
		suffix = "'"
	}
	return "'" + k + suffix
}

// maxIgnoreFileSize bounds the .sourceignore object that is read.
const maxIgnoreFileSize = 1 << 20

// ignoreFiles keeps the .sourceignore object last read for each Bucket, so that a bucket whose
// .sourceignore has not changed (same ETag) is checked without downloading any object.
type ignoreFiles struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ignoreFile
}

type ignoreFile struct {
	// location is endpoint/bucket, as the same Bucket may change them.
	location, etag string
	content        []byte
}

// read returns the content of the bucket's .sourceignore object (nil when there is none),
// downloaded only when its ETag is not the one last read.
func (f *ignoreFiles) read(ctx context.Context, c *bucket.Client, obj *sourcev1.Bucket) ([]byte, error) {
	name := sourceignore.IgnoreFile
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	location := obj.Spec.Endpoint + "/" + obj.Spec.BucketName
	stat, err := c.Stat(ctx, obj.Spec.BucketName, name)
	if bucket.IsNotFound(err) {
		f.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the '%s' object: %w", name, err)
	}
	f.mu.Lock()
	cached, ok := f.m[key]
	f.mu.Unlock()
	if ok && cached.location == location && cached.etag == stat.ETag {
		return cached.content, nil
	}
	if stat.Size > maxIgnoreFileSize {
		return nil, fmt.Errorf("the '%s' object is %d bytes, more than the %d read", name, stat.Size, maxIgnoreFileSize)
	}
	var buf bytes.Buffer
	got, err := c.Get(ctx, obj.Spec.BucketName, name, &limitedWriter{w: &buf, n: maxIgnoreFileSize})
	if bucket.IsNotFound(err) { // deleted since the stat
		f.forget(key)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the '%s' object: %w", name, err)
	}
	f.mu.Lock()
	if f.m == nil {
		f.m = map[types.NamespacedName]ignoreFile{}
	}
	f.m[key] = ignoreFile{location: location, etag: got.ETag, content: buf.Bytes()}
	f.mu.Unlock()
	return buf.Bytes(), nil
}

func (f *ignoreFiles) forget(key types.NamespacedName) {
	f.mu.Lock()
	delete(f.m, key)
	f.mu.Unlock()
}

// limitedWriter fails once more than n bytes are written.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, fmt.Errorf("more than %d bytes", maxIgnoreFileSize)
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// errBucketTooLarge is wrapped by the error of objects over --artifact-max-size.
var errBucketTooLarge = errors.New("bucket objects are over --artifact-max-size")

// bucketTooLarge is the error of the bucket's objects of size bytes (more, when partial) over limit.
func bucketTooLarge(name string, size, limit int64, partial bool) error {
	return &sizelimit.Error{What: fmt.Sprintf("the content of bucket '%s'", name), Size: size, Partial: partial,
		Flag: "--artifact-max-size", Limit: limit, Err: errors.Join(errBucketTooLarge, storage.ErrArtifactTooLarge)}
}

// maxConcurrentBucketFetches bounds the downloads under way at once for one Bucket, so that a
// bucket of many objects takes neither unbounded memory nor connections.
const maxConcurrentBucketFetches = 20

// fetchObjects downloads the objects of the index into dir, each at its key, 20 at a time, their
// sizes together bounded by limit (0: none) while they are read, as the server may send more
// than it listed. The index is updated to what the downloads found: an object deleted since the
// listing is dropped, one changed since has its new ETag.
func fetchObjects(ctx context.Context, c *bucket.Client, name string, ix bucketIndex, dir string, limit int64) error {
	root, err := os.OpenRoot(dir) // keys like "../x" cannot leave dir
	if err != nil {
		return err
	}
	defer root.Close()
	var (
		mu   sync.Mutex
		used atomic.Int64
	)
	keys := make([]string, 0, len(ix))
	for k := range ix {
		keys = append(keys, k)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentBucketFetches)
	for _, key := range keys {
		g.Go(func() error {
			if d := path.Dir(key); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("object '%s': %w", key, err)
				}
			}
			f, err := root.Create(key)
			if err != nil {
				return fmt.Errorf("object '%s': %w", key, err)
			}
			defer f.Close()
			w := &budgetWriter{w: f, used: &used, limit: limit, name: name}
			got, err := c.Get(gctx, name, key, w)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case bucket.IsNotFound(err):
				log.FromContext(ctx).Info(fmt.Sprintf("object '%s' disappeared from bucket '%s' since it was listed", key, name))
				delete(ix, key)
				_ = root.Remove(key)
				return nil
			case err != nil:
				return fmt.Errorf("getting object '%s': %w", key, err)
			}
			if got.ETag != ix[key].ETag {
				ix[key] = got
			}
			return f.Close()
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("fetching from bucket '%s': %w", name, err)
	}
	return nil
}

// budgetWriter counts what all downloads of one fetch write together, and fails the one that
// goes over the limit.
type budgetWriter struct {
	w     io.Writer
	used  *atomic.Int64
	limit int64
	name  string
}

func (b *budgetWriter) Write(p []byte) (int, error) {
	if n := b.used.Add(int64(len(p))); b.limit > 0 && n > b.limit {
		return 0, bucketTooLarge(b.name, b.limit, b.limit, true)
	}
	return b.w.Write(p)
}
