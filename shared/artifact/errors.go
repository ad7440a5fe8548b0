package artifact

import "errors"

// The reasons an artifact is refused; errors returned by this package wrap one of them, so
// callers can tell with errors.Is which rule the artifact broke.
var (
	// ErrDigestMismatch: the bytes downloaded do not hash to the expected digest.
	ErrDigestMismatch = errors.New("artifact digest mismatch")
	// ErrUnsupportedDigest: the digest is malformed or names an algorithm other than sha256,
	// sha384 or sha512.
	ErrUnsupportedDigest = errors.New("unsupported artifact digest")
	// ErrTooLarge: the download or the extracted content exceeds its size limit.
	ErrTooLarge = errors.New("artifact too large")
	// ErrTooManyFiles: the archive holds more entries than allowed.
	ErrTooManyFiles = errors.New("artifact has too many files")
	// ErrUnsafePath: an entry is absolute, climbs out of the target with `..`, or a link points
	// outside the target.
	ErrUnsafePath = errors.New("artifact entry escapes the target directory")
	// ErrUnsupportedEntry: an entry is a device, FIFO or other special file, or, for ReadFile,
	// not a regular file.
	ErrUnsupportedEntry = errors.New("artifact entry of unsupported type")
	// ErrFileNotFound: ReadFile's file is not in the artifact.
	ErrFileNotFound = errors.New("no such file in the artifact")
)
