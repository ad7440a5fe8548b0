package webhook

import (
	"encoding/json"
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
