package storage

import (
	"context"
	"io"
	"os"
	"time"
)

// Remote is the object store the replicas of a source-controller share (--storage-backend=s3).
// The local directory stays where artifacts are written and kept; each written artifact, and
// each stable link, is uploaded to the store under the same path, so that every replica serves
// every artifact at the same URL, from its disk or else from the store, and a replica that
// takes an object over finds its artifact there instead of fetching the source again.
type Remote interface {
	// Put uploads the file f (size bytes, of the given digest) as the object name, replacing
	// what was there whole.
	Put(ctx context.Context, name string, f *os.File, size int64, digest string) error
	// PutLink makes name answer as target, an object of the same directory (a stable link).
	PutLink(ctx context.Context, name, target string) error
	// Open opens the object name, following a link once; the error wraps fs.ErrNotExist when
	// there is no such object.
	Open(ctx context.Context, name string) (RemoteObject, error)
	// List returns the objects directly under dir (links included).
	List(ctx context.Context, dir string) ([]RemoteInfo, error)
	// Delete removes the object name; a missing object is not an error.
	Delete(ctx context.Context, name string) error
}

// RemoteInfo describes an object of the store.
type RemoteInfo struct {
	// Name is the object's path, slash-separated, as the artifact's.
	Name    string
	Size    int64
	ModTime time.Time
	// Digest is the artifact's digest, recorded when it was uploaded.
	Digest string
	// Link is the target of a link, empty for an artifact.
	Link string
}

// RemoteObject is an opened object: seekable, so that Range requests read only their bytes.
type RemoteObject interface {
	io.ReadSeekCloser
	Info() RemoteInfo
}

// remoteTimeout bounds each exchange with the store that has no context of its own (the writes
// of Archive and Copy).
const remoteTimeout = 5 * time.Minute
