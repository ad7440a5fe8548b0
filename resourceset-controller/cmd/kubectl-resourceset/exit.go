package main

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes. A build exits 0 or exitError; with --diff the codes are kubectl diff's: 0 when the
// cluster already matches, exitDifferences when it does not, exitDiffError when the comparison
// failed.
const (
	exitError       = 1
	exitDifferences = 1
	exitDiffError   = 2
)

// codedError carries the exit code of a failure; err may be nil when there is nothing to say
// (differences found).
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

func (e *codedError) Unwrap() error { return e.err }

// exitCode prints err kubectl style ("error: ...") and returns the process exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := exitError
	var coded *codedError
	if errors.As(err, &coded) {
		code = coded.code
		if coded.err == nil {
			return code
		}
	}
	fmt.Fprintln(stderr, "error:", err)
	return code
}
