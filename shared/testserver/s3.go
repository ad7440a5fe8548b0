package testserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// S3Options configure NewS3. The zero value is an anonymous plain-HTTP server.
type S3Options struct {
	// AccessKey and SecretKey, when AccessKey is set, require every request to be signed with
	// these keys (AWS Signature Version 4).
	AccessKey, SecretKey string
	// TLS serves HTTPS with httptest's certificate for 127.0.0.1; CAPEM returns it.
	TLS bool
	// ClientCert, with TLS, requires a client certificate issued by the server's own CA
	// (ClientCertPEM).
	ClientCert bool
}

// S3 is an S3 object storage in process: gofakes3 (an implementation of the S3 REST API) over
// its in-memory backend, behind httptest on loopback. Buckets are addressed by path
// ("/bucket/key"), as clients do for an IP endpoint. Content lives in memory and is lost with
// the test.
type S3 struct {
	srv      *httptest.Server
	backend  *s3mem.Backend
	clientCA *clientCA // nil without S3Options.ClientCert

	mu sync.Mutex
	// gets counts the GETs of each object's content, by "bucket/key".
	gets map[string]int
}

// NewS3 starts an S3 server without buckets. It is stopped by t.Cleanup.
func NewS3(t testing.TB, opts S3Options) *S3 {
	t.Helper()
	s := &S3{backend: s3mem.New(), gets: map[string]int{}}
	// gofakes3 answers every request without looking at its signature, so the keys are checked
	// in front of it (s3_sigv4.go).
	var handler http.Handler = gofakes3.New(s.backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	handler = s.urlEncodedListing(handler) // s3_list.go
	if opts.AccessKey != "" {
		handler = &sigV4Auth{next: handler, accessKey: opts.AccessKey, secretKey: opts.SecretKey}
	}
	s.srv = httptest.NewUnstartedServer(s.count(handler))
	s.srv.Config.ErrorLog = log.New(logWriter(cleanupSafeLogf(t)), "", 0)
	if opts.TLS {
		if opts.ClientCert {
			s.clientCA = newClientCA(t)
			s.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
			s.clientCA.require(s.srv.TLS)
		}
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

// count records the GETs of object content: a path "/bucket/key" with a key (listings and
// bucket queries have none) that the server answered 200 or 206.
func (s *S3) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w} // helm_repo.go's
		next.ServeHTTP(rec, r)
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if r.Method == http.MethodGet && key != "" && (rec.status == http.StatusOK || rec.status == http.StatusPartialContent || rec.status == 0) {
			s.mu.Lock()
			s.gets[bucket+"/"+key]++
			s.mu.Unlock()
		}
	})
}

// Endpoint is the server's "127.0.0.1:port", a Bucket's spec.endpoint.
func (s *S3) Endpoint() string {
	return strings.TrimPrefix(strings.TrimPrefix(s.srv.URL, "https://"), "http://")
}

// CAPEM is the PEM certificate of the HTTPS server, to trust as "ca.crt"; nil without TLS.
func (s *S3) CAPEM() []byte {
	if s.srv.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// TLSConfig trusts the server's certificate; nil without TLS.
func (s *S3) TLSConfig() *tls.Config {
	if s.srv.TLS == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// ClientCertPEM issues a client certificate the server accepts, as `tls.crt` and `tls.key`; the
// server must require client certificates (S3Options.ClientCert).
func (s *S3) ClientCertPEM(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	if s.clientCA == nil {
		t.Fatal("the S3 server does not require client certificates: set S3Options.ClientCert")
	}
	return s.clientCA.issue(t)
}

// Put stores content at key, creating the bucket when it does not exist. The object's ETag is
// the MD5 of its content, as S3 gives for a single-part upload.
func (s *S3) Put(t testing.TB, bucket, key, content string) {
	t.Helper()
	if err := s.backend.CreateBucket(bucket); err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists) {
		t.Fatalf("creating bucket %q: %v", bucket, err)
	}
	// The metadata an upload through the API gets (gofakes3 keeps Last-Modified there).
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "application/octet-stream"}
	if _, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader([]byte(content)), int64(len(content)), nil); err != nil {
		t.Fatalf("putting %s/%s: %v", bucket, key, err)
	}
}

// Delete removes the object at key.
func (s *S3) Delete(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := s.backend.DeleteObject(bucket, key); err != nil {
		t.Fatalf("deleting %s/%s: %v", bucket, key, err)
	}
}

// Gets is how many times the content of objects of the bucket was downloaded (GET), over all
// its keys; HEADs and listings are not counted.
func (s *S3) Gets(bucket string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.gets {
		if strings.HasPrefix(k, bucket+"/") {
			n += c
		}
	}
	return n
}
