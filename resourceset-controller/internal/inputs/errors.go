package inputs

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// TooManyError is returned by Combine when the Permute strategy would give more combinations
// than the limit. Retrying cannot help until the inputs change.
type TooManyError struct {
	// Count is the number of combinations the product would hold.
	Count *big.Int
	// Sizes are the numbers of inputs of the dimensions, in the order of Combine's sources.
	Sizes []int
	// Limit is the cap that Count exceeds.
	Limit int
}

func (e *TooManyError) Error() string {
	sizes := make([]string, len(e.Sizes))
	for i, s := range e.Sizes {
		sizes[i] = thousands(strconv.Itoa(s))
	}
	return fmt.Sprintf("the Permute input strategy gives %s input combinations (%s), more than the limit of %s: narrow the providers' filters",
		thousands(e.Count.String()), strings.Join(sizes, " × "), thousands(strconv.Itoa(e.Limit)))
}

// thousands puts commas between the groups of three digits of a decimal integer.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	if len(s) <= 3 {
		return sign + s
	}
	var b strings.Builder
	b.WriteString(sign)
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > len(sign) {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// InvalidFilterError is a provider filter that cannot be used (a regular expression or SemVer
// range that does not parse). Retrying cannot help until the spec changes, so the controller
// treats it as terminal.
type InvalidFilterError struct {
	// Field is the filter field, e.g. "includeTag".
	Field string
	// Value is the field's value.
	Value string
	// Err is the parser's error.
	Err error
}

func (e *InvalidFilterError) Error() string {
	return fmt.Sprintf("invalid filter.%s %q: %v", e.Field, e.Value, e.Err)
}

func (e *InvalidFilterError) Unwrap() error { return e.Err }

// InvalidURLError is a provider URL that cannot be used. Like InvalidFilterError it is terminal.
type InvalidURLError struct {
	// URL is the provider's URL.
	URL string
	// Reason says what is wrong with it.
	Reason string
}

func (e *InvalidURLError) Error() string {
	return fmt.Sprintf("invalid url %q: %s", e.URL, e.Reason)
}

// IsTerminal reports whether err is an error of the provider's spec that no retry can fix: an
// *InvalidFilterError, an *InvalidURLError or a *RefusedAddressError, also wrapped.
func IsTerminal(err error) bool {
	var f *InvalidFilterError
	var u *InvalidURLError
	var a *RefusedAddressError
	return errors.As(err, &f) || errors.As(err, &u) || errors.As(err, &a)
}
