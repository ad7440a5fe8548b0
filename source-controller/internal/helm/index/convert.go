package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/Masterminds/semver/v3"
)

var (
	// ErrIndexTooLarge is wrapped by Convert's error when the index is bigger than maxSize.
	ErrIndexTooLarge = errors.New("helm repository index too large")
	// ErrInvalidIndex is wrapped by Convert's error when index.yaml cannot be read as a Helm
	// repository index, and by Resolve's when the compact index is damaged.
	ErrInvalidIndex = errors.New("invalid helm repository index")
)

// Stats counts what Convert kept.
type Stats struct {
	// Charts is the number of chart names in the index's entries.
	Charts int
	// Versions is the number of chart versions kept.
	Versions int
	// SkippedVersions is the number of entries left out because Helm would drop them when
	// loading the index: null entries, a version that is not semver, a missing or bad name,
	// an unknown chart type, null maintainers or dependencies, a bad dependency alias.
	SkippedVersions int
}

// Convert reads a Helm repository index from r, at most maxSize bytes of it (maxSize <= 0:
// no limit), and writes the compact index that Resolve reads to w.
//
// The YAML is split into top-level keys and, under entries, into one chunk per chart by
// looking at indentation, and each chunk is decoded on its own; memory is thereby bounded by
// the largest chart's entry list (and by any single top-level value other than entries)
// instead of the whole index. Within a chunk, the fields Convert does not read (annotations,
// descriptions…: most of the bytes) are blanked before decoding, which makes conversion
// about three times faster (see filterChunk). An index in JSON form, which Helm also
// accepts, is streamed with encoding/json's tokenizer in the same way. Shapes the line
// splitter cannot prove safe to split (flow style, an indented root, tags or anchors on
// entries) fall back to decoding that part whole: correct, just not bounded.
//
// On error, what was written to w is incomplete and must be discarded.
func Convert(r io.Reader, w io.Writer, maxSize int64) (Stats, error) {
	c := newConverter(w)
	err := c.run(r, maxSize)
	return c.stats, err
}

func newConverter(w io.Writer) *converter {
	return &converter{
		out:     bufio.NewWriterSize(w, 64<<10),
		seen:    map[string]int{},
		topKeys: map[string]bool{},
	}
}

func (c *converter) run(r io.Reader, maxSize int64) error {
	lr := &limitReader{r: r, max: maxSize}
	err := c.convert(bufio.NewReaderSize(lr, 64<<10))
	if err == nil {
		return nil
	}
	// A failed read surfaces through the YAML or JSON layer in many shapes; the reader kept
	// the real cause.
	if lr.err != nil && lr.err != io.EOF {
		if errors.Is(lr.err, ErrIndexTooLarge) {
			return lr.err
		}
		return fmt.Errorf("reading index: %w", lr.err)
	}
	return err
}

// limitReader fails with ErrIndexTooLarge as soon as more than max bytes have been read.
type limitReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.max > 0 {
		// One byte beyond the limit is enough to know the index is too large.
		if rem := l.max - l.n + 1; int64(len(p)) > rem {
			p = p[:rem]
		}
	}
	k, err := l.r.Read(p)
	l.n += int64(k)
	if l.max > 0 && l.n > l.max {
		l.err = fmt.Errorf("%w: more than %d bytes", ErrIndexTooLarge, l.max)
		return 0, l.err
	}
	if err != nil {
		l.err = err
	}
	return k, err
}

// converter holds the state of one Convert: what has been written, and what the index must
// still prove (an apiVersion and an entries mapping).
type converter struct {
	out   *bufio.Writer
	off   uint64
	table []tableEntry
	stats Stats

	seen       map[string]int  // chart name → line (YAML) or offset (JSON) it was first seen at
	topKeys    map[string]bool // top-level keys decoded, to reject duplicates as Helm's strict YAML does
	apiVersion string
	entries    entriesState

	sec, body []byte // scratch for encoding one section

	// For tests: whether entries were decoded whole rather than chart by chart, the largest
	// piece of YAML decoded at once, and how often the field filter had to give up.
	entriesWhole    bool
	largestChunk    int
	filterFallbacks int // charts whose filtered chunk did not parse
}

type entriesState int

const (
	entriesMissing entriesState = iota
	entriesNull
	entriesPresent
)

// rawEntry is one version entry of index.yaml, with the fields resolution, download and
// Helm's load-time validation need. Unknown fields are ignored.
type rawEntry struct {
	APIVersion   string           `json:"apiVersion" yaml:"apiVersion"`
	Name         string           `json:"name" yaml:"name"`
	Version      string           `json:"version" yaml:"version"`
	AppVersion   string           `json:"appVersion" yaml:"appVersion"`
	Type         string           `json:"type" yaml:"type"`
	Deprecated   bool             `json:"deprecated" yaml:"deprecated"`
	URLs         []string         `json:"urls" yaml:"urls"`
	Digest       string           `json:"digest" yaml:"digest"`
	Created      string           `json:"created" yaml:"created"`
	Maintainers  []*rawMaintainer `json:"maintainers" yaml:"maintainers"`
	Dependencies []*rawDependency `json:"dependencies" yaml:"dependencies"`

	where string // "line N" or "offset N", for messages; unexported, so no decoder sets it
}

type rawMaintainer struct {
	Name  string `json:"name" yaml:"name"`
	Email string `json:"email" yaml:"email"`
	URL   string `json:"url" yaml:"url"`
}

type rawDependency struct {
	Name  string `json:"name" yaml:"name"`
	Alias string `json:"alias" yaml:"alias"`
}

// aliasNameFormat is Helm's rule for dependency aliases (pkg/chart aliasNameFormat).
var aliasNameFormat = regexp.MustCompile("^[a-zA-Z0-9_-]+$")

func (c *converter) convert(br *bufio.Reader) error {
	if _, err := c.write(header()); err != nil {
		return err
	}
	// A UTF-8 byte order mark is allowed before YAML and JSON alike.
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	peek, _ := br.Peek(4096)
	if len(peek) == 0 {
		return fmt.Errorf("%w: empty index", ErrInvalidIndex)
	}
	var err error
	if looksLikeJSON(peek) {
		err = c.convertJSON(br)
	} else {
		err = c.convertYAML(br)
	}
	if err != nil {
		return err
	}
	return c.finish()
}

// looksLikeJSON reports whether the document starts like a JSON object: '{' followed by a
// quoted key or '}'. Helm decodes valid JSON with encoding/json; a YAML flow mapping usually
// has unquoted keys and goes through the YAML path instead.
func looksLikeJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return len(b) > 0 && (b[0] == '"' || b[0] == '}')
}

// finish checks what only the whole index can prove and writes the table and trailer.
func (c *converter) finish() error {
	if c.apiVersion == "" {
		return fmt.Errorf("%w: no apiVersion", ErrInvalidIndex)
	}
	switch c.entries {
	case entriesMissing:
		return fmt.Errorf("%w: no entries", ErrInvalidIndex)
	case entriesNull:
		return fmt.Errorf("%w: entries is null", ErrInvalidIndex)
	}
	slices.SortFunc(c.table, func(a, b tableEntry) int { return strings.Compare(a.name, b.name) })
	t := trailer{
		tableOffset: c.off,
		charts:      uint32(len(c.table)),
		versions:    uint32(c.stats.Versions),
		skipped:     uint32(c.stats.SkippedVersions),
	}
	b := appendTable(nil, c.table)
	b = t.appendTo(b)
	if _, err := c.write(b); err != nil {
		return err
	}
	return c.out.Flush()
}

func (c *converter) write(b []byte) (int, error) {
	n, err := c.out.Write(b)
	c.off += uint64(n)
	if err != nil {
		return n, fmt.Errorf("writing compact index: %w", err)
	}
	return n, nil
}

// version is a kept entry with its parsed semver.
type version struct {
	rec record
	sv  *semver.Version
}

// helmOrder sorts like helm.sh/helm/v4/pkg/repo/v1.ChartVersions. Entries of equal precedence
// (1.0.0, v1.0.0, 1.0.0+build) compare equal there, and Helm leaves them in whatever order
// sort.Sort produces; running the same unstable sort with the same comparisons on the same
// sequence (the valid entries in file order) reproduces that order exactly.
type helmOrder []*version

func (h helmOrder) Len() int           { return len(h) }
func (h helmOrder) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h helmOrder) Less(a, b int) bool { return h[a].sv.LessThan(h[b].sv) }

// addChart validates a chart's entries as Helm's loadIndex does, sorts them as Helm does and
// writes the chart's section.
func (c *converter) addChart(name string, entries []*rawEntry) error {
	kept := make([]*version, 0, len(entries))
	for _, e := range entries {
		if e == nil {
			c.stats.SkippedVersions++
			continue
		}
		// Helm fails the whole index on a bad timestamp, even in an entry it would then drop.
		var created time.Time
		if e.Created != "" {
			t, err := time.Parse(time.RFC3339, e.Created)
			if err != nil {
				return fmt.Errorf("%w: %s: chart %q version %q: created %q is not an RFC 3339 time",
					ErrInvalidIndex, e.where, name, e.Version, e.Created)
			}
			created = t
		}
		sv, ok := validate(e)
		if !ok {
			c.stats.SkippedVersions++
			continue
		}
		kept = append(kept, &version{sv: sv, rec: record{
			version:    e.Version,
			name:       e.Name,
			apiVersion: e.APIVersion,
			appVersion: e.AppVersion,
			digest:     e.Digest,
			created:    created,
			deprecated: e.Deprecated,
			urls:       e.URLs,
		}})
	}
	sort.Sort(sort.Reverse(helmOrder(kept)))

	sec := binary.AppendUvarint(c.sec[:0], uint64(len(kept)))
	body := c.body
	for _, v := range kept {
		sec, body = appendRecord(sec, body, &v.rec)
	}
	c.sec, c.body = sec, body
	off := c.off
	if _, err := c.write(sec); err != nil {
		return err
	}
	c.table = append(c.table, tableEntry{name: name, offset: off, length: uint64(len(sec))})
	c.stats.Charts++
	c.stats.Versions += len(kept)
	return nil
}

// validate applies what helm.sh/helm/v4/pkg/repo/v1.loadIndex does to each entry: default the
// apiVersion, sanitize, and drop entries that fail chart.Metadata.Validate (except the
// duplicate-dependency check, which Helm ignores for indexes). It returns the parsed version.
func validate(e *rawEntry) (*semver.Version, bool) {
	if e.APIVersion == "" {
		e.APIVersion = "v1"
	}
	e.Name = sanitizeString(e.Name)
	e.AppVersion = sanitizeString(e.AppVersion)
	if e.Name == "" || e.Name == "." || e.Name == ".." || e.Name != filepath.Base(e.Name) {
		return nil, false
	}
	if e.Version == "" {
		return nil, false
	}
	sv, err := semver.NewVersion(e.Version)
	if err != nil {
		return nil, false
	}
	switch e.Type {
	case "", "application", "library":
	default:
		return nil, false
	}
	for _, m := range e.Maintainers {
		if m == nil {
			return nil, false
		}
	}
	for _, d := range e.Dependencies {
		if d == nil || (d.Alias != "" && !aliasNameFormat.MatchString(d.Alias)) {
			return nil, false
		}
	}
	return sv, true
}

// sanitizeString is Helm's (pkg/chart): spaces normalised, non-printable characters removed.
// Helm applies it to the name and appVersion it returns, so Resolve returns the same.
func sanitizeString(str string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, str)
}

// markChart rejects a chart name seen before: Helm's strict YAML decoding fails on duplicate
// keys, and silently keeping one of two lists would resolve differently from other tools.
func (c *converter) markChart(name, where string, pos int) error {
	if first, ok := c.seen[name]; ok {
		return fmt.Errorf("%w: %s %d: chart %q is listed twice in entries (first at %s %d)",
			ErrInvalidIndex, where, pos, name, where, first)
	}
	c.seen[name] = pos
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }
