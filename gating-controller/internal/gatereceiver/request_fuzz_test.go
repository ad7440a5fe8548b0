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

// FuzzRequestParsing feeds the receiver's parsing what a caller without the token controls: the
// request line as net/http reads it, routed by the receiver's own pattern, and the body. Nothing
// panics, and what is accepted stays within bounds: a namespace and a name a Gate can have, open
// or close, one JSON object of known fields, a reason of at most 1024 bytes without control
// characters, a `for` between 0 and the maximum, a timestamp.
func FuzzRequestParsing(f *testing.F) {
	f.Add("/gates/flux-system/release-train/open", []byte(`{"reason":"Release 1.2.3","for":"30m","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/flux-system/release-train/close", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/a/b.c/open", []byte(`{"for":"2h0m1s","timestamp":"x"}`))
	f.Add("/gates/%2e%2e/x/open", []byte(`{"reason":"\u001b[2J","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/ns/name%2Fother/open", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}{"for":"1000h"}`))
	f.Add("/gates/NS/Name/open?x=1", []byte(`{"Reason":"a","FOR":"1h","timestamp":"t"}`))
	f.Add("/gates//x/close", []byte(`[]`))
	f.Add("/gates/ns/x/reopen", []byte(`{"timestamp":null,"reason":"`+strings.Repeat("é", 600)+`"}`))

	const maxFor = 2 * time.Hour
	f.Fuzz(func(t *testing.T, path string, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST " + path + " HTTP/1.1\r\nHost: receiver\r\n\r\n")))
		if err != nil {
			return // the server answers 400 before the receiver sees it
		}
		mux := http.NewServeMux()
		mux.HandleFunc(requestPattern, func(w http.ResponseWriter, r *http.Request) {
			key, act, err := parseRequestPath(r)
			if err != nil {
				return
			}
			if errs := validation.IsDNS1123Label(key.Namespace); len(errs) > 0 {
				t.Fatalf("namespace %q accepted: %v", key.Namespace, errs)
			}
			if errs := validation.IsDNS1123Subdomain(key.Name); len(errs) > 0 {
				t.Fatalf("name %q accepted: %v", key.Name, errs)
			}
			if act.verb != "open" && act.verb != "close" {
				t.Fatalf("action %q accepted", act.verb)
			}
		})
		mux.ServeHTTP(httptest.NewRecorder(), req)

		b, err := parseBody(raw, maxFor)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted a body that is not JSON: %q", raw)
		}
		if len(b.Reason) > maxReasonLength || !utf8.ValidString(b.Reason) {
			t.Fatalf("reason of %d bytes accepted: %q", len(b.Reason), b.Reason)
		}
		if strings.ContainsFunc(b.Reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
			t.Fatalf("reason with control characters accepted: %q", b.Reason)
		}
		if b.For != "" {
			if d, err := time.ParseDuration(b.For); err != nil || d <= 0 || d > maxFor {
				t.Fatalf("for %q accepted", b.For)
			}
		}
		if b.Timestamp == "" {
			t.Fatalf("a body without timestamp accepted: %q", raw)
		}
	})
}
