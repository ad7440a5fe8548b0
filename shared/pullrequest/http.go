package pullrequest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAnswer bounds the body of every answer a forge sends: a pull request's JSON is a few KiB.
const maxAnswer = 1 << 20

// ErrAnswerTooLarge is the error of reading an answer larger than 1 MiB.
var ErrAnswerTooLarge = errors.New("the forge's answer is larger than 1 MiB: is the URL that of the forge's API?")

// boundedClient is a copy of the caller's client whose answers are read up to maxAnswer bytes,
// and which follows redirects only to the host of the request (and from http to https), then as
// the caller's client would: a token sent in a header of the API's choice (GitLab's
// PRIVATE-TOKEN) would otherwise follow a redirect to any host.
func boundedClient(c *http.Client) *http.Client {
	out := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = &boundedTransport{next: next}
	callers := c.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if !strings.EqualFold(req.URL.Host, first.Host) || req.URL.Scheme != first.Scheme && req.URL.Scheme != "https" {
			return fmt.Errorf("the forge redirected to %s://%s, another address than its API's: not followed, so that the token stays with the forge; set the API URL to the forge's address", req.URL.Scheme, req.URL.Host)
		}
		if callers != nil {
			return callers(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &out
}

type boundedTransport struct{ next http.RoundTripper }

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: maxAnswer}
	return resp, nil
}

// boundedBody reads a body and fails with ErrAnswerTooLarge past its limit.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, ErrAnswerTooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
