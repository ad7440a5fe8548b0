package imagescan

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// Stats counts the HTTP requests a Scanner sent, by kind, for metrics and
// benchmarks. Each retry counts as a request.
type Stats struct {
	TagLists  int64 // GET /v2/<name>/tags/list (each page)
	Manifests int64 // HEAD or GET /v2/<name>/manifests/<ref>
	Blobs     int64 // GET /v2/<name>/blobs/<digest> (image configs)
	Other     int64 // pings of /v2/ and token requests
	// RateLimited counts the answers HTTP 429 among them.
	RateLimited int64
}

// Requests is the number of requests of every kind.
func (st Stats) Requests() int64 { return st.TagLists + st.Manifests + st.Blobs + st.Other }

// Sub is st less an earlier reading, the requests in between.
func (st Stats) Sub(earlier Stats) Stats {
	return Stats{
		TagLists:    st.TagLists - earlier.TagLists,
		Manifests:   st.Manifests - earlier.Manifests,
		Blobs:       st.Blobs - earlier.Blobs,
		Other:       st.Other - earlier.Other,
		RateLimited: st.RateLimited - earlier.RateLimited,
	}
}

// Stats reads the counters since the Scanner was made.
func (s *Scanner) Stats() Stats {
	return Stats{
		TagLists:    s.stats.tagLists.Load(),
		Manifests:   s.stats.manifests.Load(),
		Blobs:       s.stats.blobs.Load(),
		Other:       s.stats.other.Load(),
		RateLimited: s.stats.rateLimited.Load(),
	}
}

type counters struct {
	tagLists, manifests, blobs, other, rateLimited atomic.Int64
}

// countingTransport counts every request that goes on the wire, next to
// the caller's transport, below the retries.
type countingTransport struct {
	next  http.RoundTripper
	stats *counters
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	switch {
	case strings.HasPrefix(p, "/v2/") && strings.HasSuffix(p, "/tags/list"):
		t.stats.tagLists.Add(1)
	case strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/manifests/"):
		t.stats.manifests.Add(1)
	case strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/blobs/"):
		t.stats.blobs.Add(1)
	default:
		t.stats.other.Add(1)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.stats.rateLimited.Add(1)
	}
	return resp, err
}
