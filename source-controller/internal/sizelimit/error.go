package sizelimit

import (
	"fmt"
	"math"
	"strconv"
)

// Error is content refused for its size.
type Error struct {
	// What is refused, e.g. "Git clone".
	What string
	// Size is the size of what is refused, or, when Partial, how far it got before it was
	// stopped.
	Size int64
	// Partial: the content was stopped once over Limit, so its whole size is unknown and larger
	// than Size.
	Partial bool
	// Flag names the limit, e.g. "--git-max-clone-size".
	Flag  string
	Limit int64
	// Err, when set, is what errors.Is finds through Error, e.g. storage.ErrArtifactTooLarge.
	Err error
}

func (e *Error) Error() string {
	size, limit := Format(e.Size), Format(e.Limit)
	if size == limit && e.Size != e.Limit {
		// Rounded to the same figure: the bytes tell them apart.
		size, limit = bytes(e.Size), bytes(e.Limit)
	}
	if e.Partial {
		size = "more than " + size
	}
	return fmt.Sprintf("%s is %s, over %s (%s)", e.What, size, e.Flag, limit)
}

func (e *Error) Unwrap() error { return e.Err }

// Format writes a size in bytes with binary units, e.g. "312 MiB" or "1.5 GiB".
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return bytes(n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', decimals(v), 64) + " " + []string{"KiB", "MiB", "GiB", "TiB"}[i]
}

// decimals is one decimal, none for a size that rounds to a whole number of its unit.
func decimals(v float64) int {
	if math.Round(v*10) == math.Round(v)*10 {
		return 0
	}
	return 1
}

func bytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
