package gatereceiver

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// What a body may hold: one JSON object of known fields, a reason without control characters, a
// `for` no longer than the receiver's maximum.
func TestParseBody(t *testing.T) {
	const ts = `"timestamp":"2026-11-22T10:00:00Z"`
	for _, tc := range []struct {
		name, body, err string
	}{
		{name: "minimal", body: `{` + ts + `}`},
		{name: "all fields", body: `{"reason":"Release 1.2.3","for":"30m",` + ts + `}`},
		{name: "multi-line reason", body: `{"reason":"Release\n\tnotes",` + ts + `}`},
		{name: "for at the maximum", body: `{"for":"2h",` + ts + `}`},
		{name: "trailing spaces", body: `{` + ts + "}\n \t"},
		{name: "for above the maximum", body: `{"for":"2h0m1s",` + ts + `}`,
			err: `for "2h0m1s" is longer than 2h0m0s, the longest request this receiver accepts (--receiver-max-duration)`},
		{name: "negative for", body: `{"for":"-1h",` + ts + `}`, err: `for "-1h" is not a positive duration such as 2h`},
		{name: "escape sequence in the reason", body: `{"reason":"\u001b[2J",` + ts + `}`,
			err: "reason must not contain control characters (other than newlines and tabs)"},
		{name: "C1 control in the reason", body: `{"reason":"a\u009bb",` + ts + `}`,
			err: "reason must not contain control characters (other than newlines and tabs)"},
		{name: "a second object", body: `{` + ts + `}{"for":"1000h"}`,
			err: "the body must be one JSON object with reason, for and timestamp, and nothing after it"},
		{name: "trailing garbage", body: `{` + ts + `}x`,
			err: "the body must be one JSON object with reason, for and timestamp, and nothing after it"},
		{name: "no timestamp", body: `{}`,
			err: "timestamp is required: the time of the request, RFC 3339 such as 2026-11-22T10:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseBody([]byte(tc.body), 2*time.Hour)
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.err))
		})
	}
}
