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
// characters, a `for` between 0 and the maximum, a timestamp, which checkTimestamp reads. The
// body is what the handler parses once the request is authenticated: its signature with the token
// is taken and one with another key refused, whatever the body.
//
// The seeds hold the malformed bodies of Argo CD's CVE-2025-59531, CVE-2025-59537 and
// CVE-2025-59538 (panics in webhook payload parsers): truncated JSON, nulls where an object or a
// string is expected, values of other types, 10,000-element arrays, deep nesting (malformedSeeds).
// Checked against a reintroduced bug (then restored): parseBody reading the timestamp again
// through `m["timestamp"].(string)` of the body decoded into a map[string]any (the seeds with
// `"timestamp":null` panic).
func FuzzRequestParsing(f *testing.F) {
	f.Add("/gates/flux-system/release-train/open", []byte(`{"reason":"Release 1.2.3","for":"30m","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/flux-system/release-train/close", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/a/b.c/open", []byte(`{"for":"2h0m1s","timestamp":"x"}`))
	f.Add("/gates/%2e%2e/x/open", []byte(`{"reason":"\u001b[2J","timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add("/gates/ns/name%2Fother/open", []byte(`{"timestamp":"2026-11-22T10:00:00Z"}{"for":"1000h"}`))
	f.Add("/gates/NS/Name/open?x=1", []byte(`{"Reason":"a","FOR":"1h","timestamp":"t"}`))
	f.Add("/gates//x/close", []byte(`[]`))
	f.Add("/gates/ns/x/reopen", []byte(`{"timestamp":null,"reason":"`+strings.Repeat("é", 600)+`"}`))
	for _, b := range malformedSeeds("for") {
		f.Add("/gates/flux-system/release-train/open", b)
	}

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

		signed := &http.Request{Header: http.Header{}}
		for k, v := range withSignature(fuzzToken, raw) {
			signed.Header.Set(k, v)
		}
		if !authenticated(signed, raw, []byte(fuzzToken)) {
			t.Fatalf("the signature of a body with the token was refused: %q", raw)
		}
		if authenticated(signed, raw, []byte("another-token")) {
			t.Fatalf("the signature of a body with another key was taken: %q", raw)
		}

		b, err := parseBody(raw, maxFor)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted a body that is not JSON: %q", raw)
		}
		if _, ok := asObject(raw); !ok {
			t.Fatalf("accepted a body that is not one object: %q", raw)
		}
		_ = checkTimestamp(b.Timestamp, time.Now(), 5*time.Minute)
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

// fuzzToken is the token the fuzzed bodies are signed with.
const fuzzToken = "fuzz-token-c0ffee"

// malformedSeeds are bodies no caller makes (the class of Argo CD's CVE-2025-59531,
// CVE-2025-59537 and CVE-2025-59538): truncated JSON, nulls where an object or a string is
// expected, values of other types, 10,000-element arrays, deep nesting; field is the third field
// of the route's body (for, or revision).
func malformedSeeds(field string) [][]byte {
	const ts = `"timestamp":"2026-11-22T10:00:00Z"`
	bodies := []string{
		`{"reason":"deploy",` + ts[:25], `{"reason":"deploy","`, `{`, ``, `"`,
		`null`, `{"reason":null,"` + field + `":null,"timestamp":null}`, `{"timestamp":null}`,
		`[]`, `[{` + ts + `}]`, `{"timestamp":["2026-11-22T10:00:00Z"]}`, `{"reason":{"a":1},` + ts + `}`,
		`{"` + field + `":30,` + ts + `}`, `{"` + field + `":true,` + ts + `}`, `{"timestamp":1e400}`,
		`{"reason":"a","reason":[1],` + ts + `}`, `{` + ts + `,"` + field + `":"9223372036854775807ns"}`,
		"[" + strings.Repeat(`{`+ts+`},`, 9999) + `{` + ts + `}]`,
		`{"reason":[` + strings.Repeat(`"a",`, 9999) + `"a"],` + ts + `}`,
		`{"` + field + `":[` + strings.Repeat(`null,`, 9999) + `null],` + ts + `}`,
		`{"reason":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `,` + ts + `}`,
		`{"x":` + strings.Repeat(`{"x":`, 5000) + `1` + strings.Repeat("}", 5000) + `,` + ts + `}`,
	}
	out := make([][]byte, 0, len(bodies))
	for _, b := range bodies {
		out = append(out, []byte(b))
	}
	return out
}

// asObject decodes one JSON object of raw, with its fields; ok is false for anything else.
func asObject(raw []byte) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}
