package testserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// sigV4Auth lets through only requests signed with its keys (AWS Signature Version 4 in the
// Authorization header), as S3 does; gofakes3 itself accepts any request. The payload hash is
// taken from x-amz-content-sha256 as signed, not checked against the body: the clients under
// test send bodies only to the test's own uploads.
type sigV4Auth struct {
	next                 http.Handler
	accessKey, secretKey string
}

func (a *sigV4Auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code, msg := a.check(r); code != "" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource></Error>`,
			code, msg, r.URL.Path)
		return
	}
	a.next.ServeHTTP(w, r)
}

// check returns the S3 error code and message of a request that is not signed with the keys,
// "" when it is.
func (a *sigV4Auth) check(r *http.Request) (code, msg string) {
	const algorithm = "AWS4-HMAC-SHA256"
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), algorithm+" ")
	if !ok {
		return "AccessDenied", "Access Denied."
	}
	fields := map[string]string{}
	for _, f := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	// Credential is <access key>/<date>/<region>/<service>/aws4_request.
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 {
		return "AuthorizationHeaderMalformed", "The authorization header is malformed."
	}
	if cred[0] != a.accessKey {
		return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var headers strings.Builder
	for _, h := range signed {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&headers, "%s:%s\n", h, strings.TrimSpace(v))
	}
	canonical := strings.Join([]string{
		r.Method, r.URL.EscapedPath(), canonicalQuery(r), headers.String(),
		fields["SignedHeaders"], r.Header.Get("X-Amz-Content-Sha256"),
	}, "\n")
	scope := strings.Join(cred[1:], "/")
	toSign := strings.Join([]string{algorithm, r.Header.Get("X-Amz-Date"), scope, hexSHA256(canonical)}, "\n")
	key := []byte("AWS4" + a.secretKey)
	for _, part := range cred[1:] {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."
	}
	return "", ""
}

// canonicalQuery is the query sorted by name then value, each part URI-encoded with %20 for
// spaces.
func canonicalQuery(r *http.Request) string {
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		vs := q[k]
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, awsEscape(k)+"="+awsEscape(v))
		}
	}
	return strings.Join(parts, "&")
}

// awsEscape percent-encodes every byte but the unreserved characters (A-Z a-z 0-9 - _ . ~).
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
