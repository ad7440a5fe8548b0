package gatereceiver

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzRespondParsing feeds the parsing of /approve and /reject what any caller controls, before
// the API server is asked who they are: the request line, routed by the receiver's own patterns,
// and the body. Nothing panics, and what is accepted stays within bounds: a namespace and a name
// a Gate can have, one JSON object of known fields (none of them an identity), a reason and a
// revision within their lengths and without control characters, a timestamp, which
// checkTimestamp reads. The seeds hold the malformed bodies of Argo CD's CVE-2025-59531,
// CVE-2025-59537 and CVE-2025-59538 (malformedSeeds).
func FuzzRespondParsing(f *testing.F) {
	f.Add("/gates/flux-system/release/approve", []byte(`{"reason":"LGTM","revision":"main@sha1:4f2c9e1","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/flux-system/release/reject", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/a/b.c/approve", []byte(`{"user":"system:admin","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/%2e%2e/x/reject", []byte(`{"revision":"a\u0000b","timestamp":"x"}`))
	f.Add("/gates/ns/name%2Fother/approve", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}{"groups":["system:masters"]}`))
	f.Add("/gates/NS/Name/approve?x=1", []byte(`{"Revision":"`+strings.Repeat("a", 1100)+`","timestamp":"t"}`))

	for _, b := range malformedSeeds("revision") {
		f.Add("/gates/flux-system/release/approve", b)
	}

	f.Fuzz(func(t *testing.T, path string, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST " + path + " HTTP/1.1\r\nHost: receiver\r\n\r\n")))
		if err != nil {
			return
		}
		check := func(w http.ResponseWriter, r *http.Request) {
			key, ok := parseRespondPath(r)
			if !ok {
				return
			}
			if errs := validation.IsDNS1123Label(key.Namespace); len(errs) > 0 {
				t.Fatalf("namespace %q accepted: %v", key.Namespace, errs)
			}
			if errs := validation.IsDNS1123Subdomain(key.Name); len(errs) > 0 {
				t.Fatalf("name %q accepted: %v", key.Name, errs)
			}
		}
		mux := http.NewServeMux()
		mux.HandleFunc(approvePattern, check)
		mux.HandleFunc(rejectPattern, check)
		mux.ServeHTTP(httptest.NewRecorder(), req)

		b, err := parseRespondBody(raw)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted a body that is not JSON: %q", raw)
		}
		fields, ok := asObject(raw)
		if !ok {
			t.Fatalf("accepted a body that is not an object: %q", raw)
		}
		for k := range fields {
			// encoding/json matches field names without regard to case.
			if !strings.EqualFold(k, "reason") && !strings.EqualFold(k, "revision") && !strings.EqualFold(k, "timestamp") {
				t.Fatalf("accepted the field %q", k)
			}
		}
		if len(b.Reason) > maxReasonLength || !utf8.ValidString(b.Reason) {
			t.Fatalf("reason of %d bytes accepted: %q", len(b.Reason), b.Reason)
		}
		if len(b.Revision) > maxRevisionLength || strings.ContainsFunc(b.Revision, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
			t.Fatalf("revision accepted: %q", b.Revision)
		}
		if b.Timestamp == "" {
			t.Fatalf("a body without timestamp accepted: %q", raw)
		}
		_ = checkTimestamp(b.Timestamp, time.Now(), 5*time.Minute)
	})
}
