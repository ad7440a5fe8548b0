package sizelimit

import "io"

// Reader reads r up to limit bytes (0: no limit) and fails with tooLarge if r has more: for
// content whose announced size was checked but that is served by someone else, like a
// registry's blob under its descriptor.
func Reader(r io.Reader, limit int64, tooLarge error) io.Reader {
	if limit <= 0 {
		return r
	}
	return &reader{r: r, left: limit, tooLarge: tooLarge}
}

type reader struct {
	r        io.Reader
	left     int64
	tooLarge error
}

func (l *reader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// At the limit: one more byte is one too many, the end is fine.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, l.tooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
