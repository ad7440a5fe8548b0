package keeper

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/artifact"
	"github.com/sluice-gitops/sluice/shared/fluxapi"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/keeper/calendar"
)

// The keepers read the sources of their calendars (their status.artifact) from the API server,
// and both controllers watch their metadata only.
// +kubebuilder:rbac:groups=source.toolkit.fluxcd.io,resources=gitrepositories;ocirepositories;buckets;externalartifacts,verbs=get;list;watch

// sourceGroupVersion is the version of the source API the controller reads, whatever
// spec.calendar.sourceRef.apiVersion says: the fields it reads (status.artifact) are the same in
// every version.
var sourceGroupVersion = fluxapi.SourceV1.String()

// NewCalendarFetcher is the artifact client of the keepers: bounded waits, so that an artifact
// server that does not answer holds a reconcile for minutes at most, never forever.
func NewCalendarFetcher() *artifact.Fetcher {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	transport.TLSHandshakeTimeout = 10 * time.Second
	transport.ResponseHeaderTimeout = 30 * time.Second
	return &artifact.Fetcher{Client: &http.Client{Transport: transport, Timeout: 2 * time.Minute}, Retries: 2}
}

// defaultCalendarFetcher serves reconcilers built without a fetcher.
var defaultCalendarFetcher = NewCalendarFetcher()

// Stale: the keeper's calendar is that of an earlier artifact of its source.
type Stale struct {
	// Note says which revision is kept and why, for the keeper's status and event.
	Note string
}

// newSource is an empty source object of kind, read as unstructured: the gating-controller
// does not import the source-controller's API.
func newSource(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sourceGroupVersion)
	u.SetKind(kind)
	return u
}

// sourceCalendar reads the keeper's calendar from the file spec.calendar.path of the artifact
// of spec.calendar.sourceRef, in the keeper's namespace (shared/artifact's contract).
func (rd CalendarReader) sourceCalendar(ctx context.Context, gk *gatingv1.GateKeeper) (*calendar.Calendar, *Stale, error) {
	c := gk.Spec.Calendar
	ref := c.SourceRef
	source := fmt.Sprintf("%s '%s'", ref.Kind, ref.Name)
	fail := func(format string, args ...any) error {
		return &CalendarError{err: fmt.Errorf("spec.calendar.sourceRef: "+format, args...), retry: CalendarRetry}
	}
	src := newSource(ref.Kind)
	if err := rd.Client.Get(ctx, client.ObjectKey{Namespace: gk.Namespace, Name: ref.Name}, src); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, fail("%s not found", source)
		case apimeta.IsNoMatchError(err):
			return nil, nil, fail("the API server does not serve the kind %s of %s: is its CRD installed?", ref.Kind, sourceGroupVersion)
		}
		return nil, nil, &TransientError{fmt.Errorf("reading the calendar's %s: %w", source, err)}
	}
	art, err := artifact.FromObject(src)
	if err != nil {
		return nil, nil, fail("%w", err)
	}
	if art == nil || art.URL == "" || art.Digest == "" {
		return nil, nil, fail("%s has no artifact yet", source)
	}
	fetcher := rd.Fetcher
	if fetcher == nil {
		fetcher = defaultCalendarFetcher
	}
	id := gk.Namespace + "/" + ref.Kind + "/" + ref.Name + "/" + c.Path + "/" + gk.Spec.TimeZone
	return artifactCalendars.read(ctx, fetcher, id, source, art, c.Path, gk.Spec.TimeZone)
}

// artifactCalendars keeps, for each source, file and time zone, what the last artifact read
// held, by its digest: a gate and its keepers download and parse each artifact once, and a
// failed download of a newer artifact leaves the last good calendar in use.
var artifactCalendars = &artifactCalendarCache{entries: map[string]*artifactCalendar{}}

type artifactCalendarCache struct {
	mu      sync.Mutex
	entries map[string]*artifactCalendar
}

// artifactCalendar is what the last artifact read held at the file: a calendar or the error
// that says why not (a CalendarError).
type artifactCalendar struct {
	// mu is held while an artifact is read, so that it is downloaded once.
	mu               sync.Mutex
	digest, revision string
	cal              *calendar.Calendar
	err              error
}

func (c *artifactCalendarCache) entry(id string) *artifactCalendar {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		e = &artifactCalendar{}
		c.entries[id] = e
	}
	return e
}

// read returns the calendar at path of the artifact, downloaded and parsed unless its digest was
// read last. A failed download is not remembered: the next read tries again, and meanwhile the
// calendar of the last artifact read is kept when it was a good one (stale says so); with none,
// it is a CalendarError, so the gate is held closed as for any calendar that cannot be read.
func (c *artifactCalendarCache) read(ctx context.Context, f *artifact.Fetcher, id, source string,
	art *meta.Artifact, path, tz string) (*calendar.Calendar, *Stale, error) {
	e := c.entry(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.digest == art.Digest {
		return e.cal, nil, e.err
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, nil, err // reported by the spec's own check
		}
		loc = l
	}
	where := fmt.Sprintf("spec.calendar.sourceRef: %s revision '%s'", source, art.Revision)
	data, contentErr, downloadErr := readArtifactFile(ctx, f, art, path)
	if downloadErr != nil {
		if e.cal != nil {
			return e.cal, &Stale{Note: fmt.Sprintf("the calendar of %s revision '%s' is kept: revision '%s' cannot be downloaded: %s",
				source, e.revision, art.Revision, downloadErr)}, nil
		}
		return nil, nil, &CalendarError{err: fmt.Errorf("%s: %w", where, downloadErr), retry: DownloadRetry}
	}
	var cal *calendar.Calendar
	var err error
	if contentErr != nil {
		err = &CalendarError{err: fmt.Errorf("%s: %w", where, contentErr), retry: CalendarRetry}
	} else if cal, err = calendar.Parse(data, loc); err != nil {
		err = &CalendarError{err: fmt.Errorf("%s file '%s': %w", where, path, err), retry: CalendarRetry}
	}
	e.digest, e.revision, e.cal, e.err = art.Digest, art.Revision, cal, err
	return cal, nil, err
}

// readArtifactFile downloads the artifact and reads the file at path from it as it arrives, so
// that no more than that file is held, in memory, and nothing is written to disk. The file counts
// only once the whole artifact matched its digest: downloadErr is a failed download (the network,
// the server, the digest), contentErr what the verified artifact holds at path (no such file, not
// a regular file, too large).
func readArtifactFile(ctx context.Context, f *artifact.Fetcher, art *meta.Artifact, path string) (data []byte, contentErr, downloadErr error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		data, contentErr = artifact.ReadFile(pr, path, calendar.MaxBytes)
		// The rest of the archive: the download goes on to its end, where the digest is checked.
		_, _ = io.Copy(io.Discard, pr)
	}()
	downloadErr = f.Download(ctx, art.URL, art.Digest, pw)
	_ = pw.CloseWithError(downloadErr)
	<-done
	if downloadErr != nil {
		return nil, nil, downloadErr
	}
	return data, contentErr, nil
}
