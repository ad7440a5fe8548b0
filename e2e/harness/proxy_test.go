package harness

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// Through the proxy a client reaches the server; Down refuses new connections and cuts the open
// ones, while the server still answers directly; Up gives it back on the same address.
func TestProxyTakesTheServerAwayAndBack(t *testing.T) {
	g := NewWithT(t)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") }))
	t.Cleanup(server.Close)
	p, err := StartProxyFor(server.URL)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(p.Close)
	url := p.URL(server.URL + "/path?q=1")
	g.Expect(url).To(Equal("http://" + p.Addr() + "/path?q=1"))

	get := func(c *http.Client, url string) (string, error) {
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	g.Expect(get(http.DefaultClient, url)).To(Equal("hello"))

	// A connection open when the proxy goes down is cut.
	open, err := net.Dial("tcp", p.Addr())
	g.Expect(err).NotTo(HaveOccurred())
	defer open.Close()
	p.Down()
	_, err = open.Read(make([]byte, 1))
	g.Expect(err).To(HaveOccurred())
	_, err = get(&http.Client{Transport: &http.Transport{}}, url)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
	g.Expect(get(http.DefaultClient, server.URL)).To(Equal("hello"), "the server itself still answers")

	g.Expect(p.Up()).To(Succeed())
	g.Expect(get(&http.Client{Transport: &http.Transport{}}, url)).To(Equal("hello"))
}
