package index

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The compact index file, as Convert writes it and Resolve reads it. All fixed-width integers
// are little-endian; varints are encoding/binary unsigned varints.
//
//	header   8 bytes   "SLXIDX\x00" + format version (1)
//	sections           one per chart, in the order the charts appear in index.yaml:
//	                     uvarint count, then count records, newest first (Helm's order)
//	                   record: uvarint length + body, so a scan can skip a record unread
//	                   body:   str version, str name, str apiVersion, str appVersion,
//	                           str digest, str created (RFC 3339, "" when unset),
//	                           byte flags (bit 0: deprecated), uvarint n, n × str url
//	                   str:    uvarint length + UTF-8 bytes
//	table              one 24-byte slot per chart, sorted by chart name:
//	                     u32 name offset (into the names that follow), u32 name length,
//	                     u64 section offset, u64 section length
//	                   then the chart names, concatenated in the same order
//	trailer 32 bytes   u64 table offset, u32 charts, u32 versions, u32 skipped versions,
//	                   u32 reserved (0), "SLXEND\x00\x01"
//
// Why this shape:
//   - The table is at the end because Convert streams: a section's offset is only known once
//     the sections before it are written, and the input need not list charts in order. A
//     fixed-size trailer lets Resolve find the table with one read from the end of the file.
//   - The table is sorted and fixed-width so Resolve binary-searches it in place, without
//     building a map or a string per chart; it grows with the number of charts (about 40
//     bytes each), never with the number of versions.
//   - Records keep Helm's order and put the version first, so resolution walks one section
//     comparing version strings and decodes only the record it returns.
//   - No compression: sections are small and read with one ReadAt; inflating a stream would
//     need the bytes before the section too.
//   - Sections follow the input's chart order rather than sorted order, so Convert never
//     holds more than one chart; the output is still a pure function of the input bytes.
const (
	headerMagic   = "SLXIDX\x00"
	formatVersion = 1
	headerSize    = len(headerMagic) + 1
	trailerMagic  = "SLXEND\x00\x01"
	trailerSize   = 32
	slotSize      = 24

	flagDeprecated = 1 << 0
)

// header returns the 8 bytes a compact index starts with.
func header() []byte {
	return append([]byte(headerMagic), formatVersion)
}

// trailer is the fixed-size end of the file.
type trailer struct {
	tableOffset uint64
	charts      uint32
	versions    uint32
	skipped     uint32
}

func (t trailer) appendTo(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, t.tableOffset)
	b = binary.LittleEndian.AppendUint32(b, t.charts)
	b = binary.LittleEndian.AppendUint32(b, t.versions)
	b = binary.LittleEndian.AppendUint32(b, t.skipped)
	b = binary.LittleEndian.AppendUint32(b, 0)
	return append(b, trailerMagic...)
}

func parseTrailer(b []byte) (trailer, error) {
	if len(b) != trailerSize || string(b[trailerSize-len(trailerMagic):]) != trailerMagic {
		return trailer{}, corrupt("no trailer (not a compact index, or truncated)")
	}
	return trailer{
		tableOffset: binary.LittleEndian.Uint64(b[0:]),
		charts:      binary.LittleEndian.Uint32(b[8:]),
		versions:    binary.LittleEndian.Uint32(b[12:]),
		skipped:     binary.LittleEndian.Uint32(b[16:]),
	}, nil
}

// tableEntry is one chart's slot in the table, before it is encoded.
type tableEntry struct {
	name   string
	offset uint64
	length uint64
}

// appendTable encodes entries, which must be sorted by name.
func appendTable(b []byte, entries []tableEntry) []byte {
	var nameOff uint32
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint32(b, nameOff)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.name)))
		b = binary.LittleEndian.AppendUint64(b, e.offset)
		b = binary.LittleEndian.AppendUint64(b, e.length)
		nameOff += uint32(len(e.name))
	}
	for _, e := range entries {
		b = append(b, e.name...)
	}
	return b
}

// table is an encoded table as read from the file; lookups work on its bytes.
type table struct {
	slots []byte
	names []byte
	n     int
}

func parseTable(b []byte, charts uint32) (table, error) {
	if uint64(charts)*slotSize > uint64(len(b)) {
		return table{}, corrupt("table shorter than its %d slots", charts)
	}
	n := int(charts)
	return table{slots: b[:n*slotSize], names: b[n*slotSize:], n: n}, nil
}

// name returns slot i's chart name, aliasing the table's bytes.
func (t table) name(i int) ([]byte, error) {
	s := t.slots[i*slotSize:]
	off := uint64(binary.LittleEndian.Uint32(s))
	l := uint64(binary.LittleEndian.Uint32(s[4:]))
	if off+l > uint64(len(t.names)) {
		return nil, corrupt("chart name %d out of bounds", i)
	}
	return t.names[off : off+l], nil
}

// lookup binary-searches the sorted slots for name and returns its section's offset and length.
func (t table) lookup(name string) (offset, length uint64, found bool, err error) {
	lo, hi := 0, t.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		n, err := t.name(mid)
		if err != nil {
			return 0, 0, false, err
		}
		switch c := compareBytesString(n, name); {
		case c == 0:
			s := t.slots[mid*slotSize:]
			return binary.LittleEndian.Uint64(s[8:]), binary.LittleEndian.Uint64(s[16:]), true, nil
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, 0, false, nil
}

func compareBytesString(a []byte, b string) int {
	// The conversion does not allocate: the compiler recognises string(bytes) in comparisons.
	switch {
	case string(a) < b:
		return -1
	case string(a) > b:
		return 1
	}
	return 0
}

// record is one chart version as stored in a section.
type record struct {
	version    string
	name       string
	apiVersion string
	appVersion string
	digest     string
	created    time.Time
	deprecated bool
	urls       []string
}

// appendRecord appends r, length-prefixed, to b; scratch is reused for the body.
func appendRecord(b, scratch []byte, r *record) ([]byte, []byte) {
	body := scratch[:0]
	body = appendString(body, r.version)
	body = appendString(body, r.name)
	body = appendString(body, r.apiVersion)
	body = appendString(body, r.appVersion)
	body = appendString(body, r.digest)
	created := ""
	if !r.created.IsZero() {
		created = r.created.Format(time.RFC3339Nano)
	}
	body = appendString(body, created)
	var flags byte
	if r.deprecated {
		flags |= flagDeprecated
	}
	body = append(body, flags)
	body = binary.AppendUvarint(body, uint64(len(r.urls)))
	for _, u := range r.urls {
		body = appendString(body, u)
	}
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...), body
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads varints and strings from a section, failing with a corrupt-index error
// instead of panicking on a damaged file.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = corrupt("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next n bytes, aliasing the section.
func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = corrupt("field of %d bytes overruns its section", n)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() []byte { return d.bytes(d.uvarint()) }

// decodeRecord decodes a record body, copying its strings out of the section.
func decodeRecord(body []byte) (*record, error) {
	d := &decoder{b: body}
	r := &record{
		version:    string(d.str()),
		name:       string(d.str()),
		apiVersion: string(d.str()),
		appVersion: string(d.str()),
		digest:     string(d.str()),
	}
	created := d.str()
	flags := d.bytes(1)
	n := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if n > uint64(len(d.b)) { // every URL takes at least its length byte
		return nil, corrupt("%d URLs in a record of %d bytes", n, len(body))
	}
	r.deprecated = flags[0]&flagDeprecated != 0
	r.urls = make([]string, 0, n)
	for range n {
		r.urls = append(r.urls, string(d.str()))
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(created) > 0 {
		t, err := time.Parse(time.RFC3339Nano, string(created))
		if err != nil {
			return nil, corrupt("created %q: %v", created, err)
		}
		r.created = t
	}
	return r, nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: corrupt compact index: %s", ErrInvalidIndex, fmt.Sprintf(format, args...))
}
