package chart

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// Downloads shares chart downloads between pulls: HelmCharts that resolve to the same archive
// (same URL, same digest in the index, same credentials) make one download and one load check
// while the archive is in memory, however many there are and whether they pull at the same
// time or one after the other. Only archives whose index entry has a digest are shared: the
// digest names the content, and the download is checked against it. The archives kept are
// bounded in bytes, the least recently used going first. A nil *Downloads shares nothing.
type Downloads struct {
	maxBytes int64

	mu      sync.Mutex
	bytes   int64
	entries map[string]*list.Element // of *sharedArchive
	lru     *list.List
}

// sharedArchive is one download, done (or being done) by the first pull that asked for it.
type sharedArchive struct {
	key  string
	done chan struct{}
	// Set before done is closed: the archive and its chart's name and version, or the failure
	// (not kept: the next pull tries again).
	data          []byte
	shown         string // the URL for messages, password redacted
	name, version string
	err           error
}

// NewDownloads keeps at most maxBytes of archives; 0 or less shares nothing.
func NewDownloads(maxBytes int64) *Downloads {
	if maxBytes <= 0 {
		return nil
	}
	return &Downloads{maxBytes: maxBytes, entries: map[string]*list.Element{}, lru: list.New()}
}

// Pull is the package's Pull, with the download and the load check shared through d.
func (d *Downloads) Pull(ctx context.Context, ref RemoteReference, outDir string, opts Options) (*Result, error) {
	if d == nil || ref.Digest == "" {
		return Pull(ctx, ref, outDir, opts)
	}
	lim := opts.Limits.withDefaults()
	a, err := d.archive(ctx, ref, lim)
	if err != nil {
		return nil, err
	}
	if len(requestedValuesFiles(opts)) > 0 || opts.VersionMetadata != "" {
		// Repackaged: the chart is loaded again, to be changed.
		return FromArchive(a.data, a.shown, outDir, opts)
	}
	res := &Result{Name: a.name, Version: a.version, Path: filepath.Join(outDir, fmt.Sprintf("%s-%s.tgz", a.name, a.version))}
	if err := writeFileAtomic(res.Path, a.data); err != nil {
		return nil, err
	}
	return res, nil
}

// archive returns the shared download of ref, downloading and checking it when no other pull
// has or is.
func (d *Downloads) archive(ctx context.Context, ref RemoteReference, lim Limits) (*sharedArchive, error) {
	key := sharedKey(ref, lim)
	d.mu.Lock()
	if e, ok := d.entries[key]; ok {
		d.lru.MoveToFront(e)
		a := e.Value.(*sharedArchive)
		d.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err != nil && (errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded)) {
			return d.archive(ctx, ref, lim) // the first pull gave up: try for ourselves
		}
		return a, a.err
	}
	a := &sharedArchive{key: key, done: make(chan struct{})}
	d.entries[key] = d.lru.PushFront(a)
	d.mu.Unlock()

	a.data, a.err = d.fetch(ctx, ref, lim, a)
	d.mu.Lock()
	if a.err != nil {
		d.remove(key)
	} else {
		d.bytes += int64(len(a.data))
		d.evict()
	}
	d.mu.Unlock()
	close(a.done)
	return a, a.err
}

// fetch downloads and load-checks the archive, setting the chart's name and version on a.
func (d *Downloads) fetch(ctx context.Context, ref RemoteReference, lim Limits, a *sharedArchive) ([]byte, error) {
	data, shown, err := download(ctx, ref, lim)
	a.shown = shown
	if err != nil {
		return nil, err
	}
	c, err := loadArchive(data, newBudget(lim))
	if err != nil {
		return nil, as(ErrChartLoad, fmt.Errorf("chart downloaded from %s: %w", shown, err))
	}
	a.name, a.version = c.Name(), c.Metadata.Version
	return data, nil
}

// evict removes the least recently used archives over the byte bound (those still being
// downloaded have no bytes yet and stay).
func (d *Downloads) evict() {
	for e := d.lru.Back(); e != nil && d.bytes > d.maxBytes; {
		prev := e.Prev()
		if a := e.Value.(*sharedArchive); a.data != nil {
			d.remove(a.key)
		}
		e = prev
	}
}

func (d *Downloads) remove(key string) {
	e, ok := d.entries[key]
	if !ok {
		return
	}
	d.bytes -= int64(len(e.Value.(*sharedArchive).data))
	d.lru.Remove(e)
	delete(d.entries, key)
}

// sharedKey names an archive: where it is, what it must hash to, who may read it (a digest of
// the credentials and client certificate, so one tenant's pull is never another's) and the
// limits it was checked with.
func sharedKey(ref RemoteReference, lim Limits) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%+v", ref.Username, ref.Password, ref.URL, lim)
	if ref.TLS != nil {
		for _, c := range ref.TLS.Certificates {
			for _, der := range c.Certificate {
				h.Write(der)
			}
		}
	}
	return ref.Digest + "\x00" + hex.EncodeToString(h.Sum(nil))
}
