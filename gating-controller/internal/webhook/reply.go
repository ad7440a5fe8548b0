package webhook

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Reply writes {"message": msg} with the status code.
func Reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// RetryAfter is a Retry-After header value: whole seconds, at least one.
func RetryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Seconds()+0.5)))
}

// ReadBody reads the request's body, at most maxBytes of it. A larger body is answered 413 (the
// body is too large), a body that cannot be read 400; ok is false then. Nothing more of a larger
// body is read: Serve ends the reading of a body left unread (EndUnreadBodies).
func ReadBody(w http.ResponseWriter, r *http.Request, maxBytes int64) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			Reply(w, http.StatusRequestEntityTooLarge, "the body is too large")
			return nil, false
		}
		Reply(w, http.StatusBadRequest, "could not read the body")
		return nil, false
	}
	return body, true
}

// TooManyFailures answers a request from a source address that has spent its failed attempts
// (SourceFailures): 429, with the Retry-After of one more attempt.
func TooManyFailures(w http.ResponseWriter, interval time.Duration) {
	TooMany(w, interval, "too many failed attempts from this address")
}

// TooMany answers 429 with msg, and the Retry-After of a budget that gives one more request
// every interval.
func TooMany(w http.ResponseWriter, interval time.Duration, msg string) {
	w.Header().Set("Retry-After", RetryAfter(interval))
	Reply(w, http.StatusTooManyRequests, msg)
}
