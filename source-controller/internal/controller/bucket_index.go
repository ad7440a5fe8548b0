package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/opencontainers/go-digest"
	"k8s.io/apimachinery/pkg/types"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
	"github.com/sluice-gitops/sluice/source-controller/internal/bucket"
)

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
	err = c.List(ctx, name, obj.Spec.Prefix, func(o bucket.Object) error {
		if strings.HasSuffix(o.Key, "/") || o.Key == sourceignore.IgnoreFile || matcher.Match(strings.Split(o.Key, "/"), false) {
			return nil
		}
		ix[o.Key] = o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the objects of bucket '%s': %w", name, err)
	}
	return ix, nil
}
