package testserver

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// urlEncodedListing answers the object listings (ListObjectsV2) that ask for
// encoding-type=url, as S3 does: keys and prefixes URL-encoded, with an EncodingType element
// saying so. S3 clients (minio-go among them) always ask, so that keys which XML 1.0 cannot
// carry (a NUL or another control character) reach them intact; gofakes3 ignores the parameter
// and its XML encoder writes such characters as U+FFFD. The listing is one page (start-after is
// honoured, max-keys is not). Every other request, and a listing of a bucket that does not
// exist, goes to next (gofakes3).
func (s *S3) urlEncodedListing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		bucket := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if r.Method != http.MethodGet || q.Get("list-type") != "2" || q.Get("encoding-type") != "url" ||
			bucket == "" || strings.Contains(bucket, "/") {
			next.ServeHTTP(w, r)
			return
		}
		var prefix, delimiter *string
		if p := q.Get("prefix"); p != "" {
			prefix = &p
		}
		if d := q.Get("delimiter"); d != "" {
			delimiter = &d
		}
		p := gofakes3.NewPrefix(prefix, delimiter)
		var page gofakes3.ListBucketPage
		if after := q.Get("start-after"); after != "" {
			page.Marker, page.HasMarker = after, true
		}
		list, err := s.backend.ListBucket(bucket, &p, page)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		res := urlEncodedListV2{Name: bucket, Prefix: url.QueryEscape(q.Get("prefix")), Delimiter: url.QueryEscape(q.Get("delimiter")),
			EncodingType: "url", KeyCount: len(list.Contents) + len(list.CommonPrefixes), MaxKeys: gofakes3.DefaultMaxBucketKeys}
		for _, c := range list.Contents {
			c := *c
			c.Key = url.QueryEscape(c.Key)
			res.Contents = append(res.Contents, c)
		}
		for _, c := range list.CommonPrefixes {
			res.CommonPrefixes = append(res.CommonPrefixes, gofakes3.CommonPrefix{Prefix: url.QueryEscape(c.Prefix)})
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(xml.Header))
		_ = xml.NewEncoder(w).Encode(res)
	})
}

// urlEncodedListV2 is a ListObjectsV2 response with encoding-type=url.
type urlEncodedListV2 struct {
	XMLName        xml.Name                `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name           string                  `xml:"Name"`
	Prefix         string                  `xml:"Prefix"`
	Delimiter      string                  `xml:"Delimiter,omitempty"`
	EncodingType   string                  `xml:"EncodingType"`
	KeyCount       int                     `xml:"KeyCount"`
	MaxKeys        int64                   `xml:"MaxKeys"`
	IsTruncated    bool                    `xml:"IsTruncated"`
	Contents       []gofakes3.Content      `xml:"Contents"`
	CommonPrefixes []gofakes3.CommonPrefix `xml:"CommonPrefixes"`
}
