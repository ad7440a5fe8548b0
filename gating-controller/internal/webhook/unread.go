package webhook

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// EndUnreadBodies ends the reading of each request that h answers without reading its body to
// the end (an unknown path, a suspended object, a missing token): after such an answer net/http
// would read up to 256 KiB more of the body to discard it, for anyone who sends a body to any
// path. The connection's read deadline is passed instead, so that the connection is closed after
// the answer.
func EndUnreadBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &eofBody{ReadCloser: r.Body}
		r.Body = body
		h.ServeHTTP(w, r)
		if r.ContentLength != 0 && !body.eof {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// eofBody tells whether its reader was read to the end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}
