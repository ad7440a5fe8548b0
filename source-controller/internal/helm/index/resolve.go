package index

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/Masterminds/semver/v3"
)

var (
	// ErrChartNotFound is wrapped by Resolve's error when the index has no such chart, or no
	// version of it in the range.
	ErrChartNotFound = errors.New("chart not found")
	// ErrInvalidRange is wrapped by Resolve's error when the version range is not a semver
	// constraint: a mistake in the HelmChart's spec, which retrying will not fix.
	ErrInvalidRange = errors.New("invalid version range")
)

// ChartVersion is a chart version resolved from a compact index: what a HelmChart needs to
// download and verify the chart, and to report it.
type ChartVersion struct {
	Name       string
	Version    string
	AppVersion string
	// APIVersion is the chart's apiVersion ("v1" when the index leaves it out, as in Helm).
	APIVersion string
	Digest     string
	URLs       []string
	Created    time.Time
	Deprecated bool
}

// notFoundError keeps the message of Flux's source-controller, which users and alerts match,
// while letting callers test for ErrChartNotFound.
type notFoundError struct{ name, versionRange string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("no '%s' chart with version matching '%s' found", e.name, e.versionRange)
}

func (e *notFoundError) Unwrap() error { return ErrChartNotFound }

// Resolve returns, from the compact index at path, the version of chart name that Helm's
// repo.IndexFile.Get(name, versionRange) returns:
//   - a version whose string equals versionRange exactly, if there is one (so "v1.0.0" or
//     "1.0.0+build.2" pick that very entry among versions of equal precedence);
//   - otherwise the highest version satisfying the semver constraint, where an empty range
//     means "*": the latest stable version, since Masterminds/semver constraints only match
//     prereleases when they name one (">=1.0.0-0" does, "*" does not);
//   - among versions of equal precedence (build metadata, a "v" prefix), Helm's order.
//
// It reads the trailer, the table and that chart's section, never the other charts'.
func Resolve(path, name, versionRange string) (*ChartVersion, error) {
	ix, err := Open(path)
	if err != nil {
		return nil, err
	}
	return ix.Resolve(name, versionRange)
}

// Index is an opened compact index: its table of charts in memory (a few KiB: tens of bytes
// per chart), the sections on disk. It is what the index cache keeps.
type Index struct {
	path        string
	table       table
	tableOffset uint64
}

// Open reads the header, trailer and table of the compact index at path.
func Open(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := uint64(fi.Size())
	if size < uint64(headerSize+trailerSize) {
		return nil, corrupt("%d bytes is too short (not a compact index?)", size)
	}
	var hdr [headerSize]byte
	if err := readAt(f, hdr[:], 0); err != nil {
		return nil, err
	}
	if string(hdr[:len(headerMagic)]) != headerMagic {
		return nil, corrupt("bad header (not a compact index?)")
	}
	if v := hdr[len(headerMagic)]; v != formatVersion {
		return nil, corrupt("format version %d, want %d", v, formatVersion)
	}
	var tb [trailerSize]byte
	if err := readAt(f, tb[:], size-trailerSize); err != nil {
		return nil, err
	}
	tr, err := parseTrailer(tb[:])
	if err != nil {
		return nil, err
	}
	if tr.tableOffset < uint64(headerSize) || tr.tableOffset > size-trailerSize {
		return nil, corrupt("table offset %d out of bounds", tr.tableOffset)
	}
	raw := make([]byte, size-trailerSize-tr.tableOffset)
	if err := readAt(f, raw, tr.tableOffset); err != nil {
		return nil, err
	}
	t, err := parseTable(raw, tr.charts)
	if err != nil {
		return nil, err
	}
	return &Index{path: path, table: t, tableOffset: tr.tableOffset}, nil
}

// Resolve is the package's Resolve on an opened index: one read of the chart's section.
func (ix *Index) Resolve(name, versionRange string) (*ChartVersion, error) {
	rng := versionRange
	if rng == "" {
		rng = "*"
	}
	constraint, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, fmt.Errorf("%w '%s': %v", ErrInvalidRange, versionRange, err)
	}
	sec, err := ix.readSection(name)
	if err != nil {
		return nil, err
	}
	if sec == nil {
		return nil, &notFoundError{name: name, versionRange: versionRange}
	}

	// Helm looks for the exact string first, then walks its sorted list for the first version
	// in range. The section is in that order, so the first hit of each pass is Helm's answer.
	var hit []byte
	if versionRange != "" {
		hit, err = scanSection(sec, func(v []byte) bool { return string(v) == versionRange })
		if err != nil {
			return nil, err
		}
	}
	if hit == nil {
		hit, err = scanSection(sec, func(v []byte) bool {
			sv, err := semver.NewVersion(string(v))
			return err == nil && constraint.Check(sv)
		})
		if err != nil {
			return nil, err
		}
	}
	if hit == nil {
		return nil, &notFoundError{name: name, versionRange: versionRange}
	}
	r, err := decodeRecord(hit)
	if err != nil {
		return nil, err
	}
	return &ChartVersion{
		Name:       r.name,
		Version:    r.version,
		AppVersion: r.appVersion,
		APIVersion: r.apiVersion,
		Digest:     r.digest,
		URLs:       r.urls,
		Created:    r.created,
		Deprecated: r.deprecated,
	}, nil
}

// readSection returns the section of chart name, or nil if the index has no such chart.
func (ix *Index) readSection(name string) ([]byte, error) {
	off, length, found, err := ix.table.lookup(name)
	if err != nil || !found {
		return nil, err
	}
	if off < uint64(headerSize) || off+length > ix.tableOffset || length == 0 {
		return nil, corrupt("section of %q out of bounds", name)
	}
	f, err := os.Open(ix.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := make([]byte, length)
	if err := readAt(f, sec, off); err != nil {
		return nil, err
	}
	return sec, nil
}

func readAt(f *os.File, b []byte, off uint64) error {
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		if err == io.EOF {
			return corrupt("truncated")
		}
		return err
	}
	return nil
}

// scanSection returns the body of the first record whose version satisfies match, or nil.
// Only the version, the first field of each record, is looked at.
func scanSection(sec []byte, match func(version []byte) bool) ([]byte, error) {
	d := &decoder{b: sec}
	n := d.uvarint()
	if n > uint64(len(sec)) {
		return nil, corrupt("%d records in a section of %d bytes", n, len(sec))
	}
	for range n {
		body := d.bytes(d.uvarint())
		if d.err != nil {
			return nil, d.err
		}
		bd := &decoder{b: body}
		v := bd.str()
		if bd.err != nil {
			return nil, bd.err
		}
		if match(v) {
			return body, nil
		}
	}
	return nil, d.err
}
