package sizelimit

import (
	"errors"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// Content up to the limit reads whole; one byte more fails with the error given.
func TestReader(t *testing.T) {
	tooLarge := errors.New("too large")
	for _, tt := range []struct {
		content string
		limit   int64
		wantErr bool
	}{
		{content: "hello", limit: 0},
		{content: "hello", limit: 6},
		{content: "hello", limit: 5},
		{content: "hello", limit: 4, wantErr: true},
		{content: "", limit: 1},
	} {
		g := NewWithT(t)
		b, err := io.ReadAll(Reader(strings.NewReader(tt.content), tt.limit, tooLarge))
		if tt.wantErr {
			g.Expect(err).To(MatchError(tooLarge), "%+v", tt)
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), "%+v", tt)
		g.Expect(string(b)).To(Equal(tt.content))
	}
}
