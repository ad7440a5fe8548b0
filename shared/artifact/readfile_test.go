package artifact

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A consumer reads one file of an artifact (a GateKeeper's calendar) without extracting it: the
// regular file of that name and nothing else, within its limit.
func TestReadFile(t *testing.T) {
	for name, tc := range map[string]struct {
		entries []entry
		name    string
		maxSize int64
		limits  Limits
		want    string // the content; empty when err is set
		err     error
		message string // in the error
	}{
		"a file in a directory": {
			entries: []entry{dir("freeze/"), file("freeze/calendar.ics", "BEGIN:VCALENDAR"), file("README.md", "hi")},
			name:    "freeze/calendar.ics", want: "BEGIN:VCALENDAR",
		},
		"a name with ./ and an entry with ./, as source archives write them": {
			entries: []entry{file("./freeze/calendar.ics", "cal")},
			name:    "./freeze//calendar.ics", want: "cal",
		},
		"an empty file": {
			entries: []entry{file("empty.ics", "")},
			name:    "empty.ics", want: "",
		},
		"a file of exactly the limit": {
			entries: []entry{file("cal.ics", "12345")},
			name:    "cal.ics", maxSize: 5, want: "12345",
		},
		"the last of two entries of the name, as Extract leaves it": {
			entries: []entry{file("cal.ics", "old"), file("other", "x"), file("cal.ics", "new")},
			name:    "cal.ics", want: "new",
		},
		"a missing file": {
			entries: []entry{file("freeze/other.ics", "x")},
			name:    "freeze/calendar.ics",
			err:     ErrFileNotFound, message: "'freeze/calendar.ics': no such file in the artifact",
		},
		"a file only inside a directory of that name": {
			entries: []entry{dir("calendar.ics/"), file("calendar.ics/x", "x")},
			name:    "calendar.ics",
			err:     ErrUnsupportedEntry, message: "'calendar.ics' is a directory, not a regular file",
		},
		"a symlink, not followed": {
			entries: []entry{file("real.ics", "x"), symlink("calendar.ics", "real.ics")},
			name:    "calendar.ics",
			err:     ErrUnsupportedEntry, message: "'calendar.ics' is a symbolic link, not a regular file",
		},
		"a hard link, not followed": {
			entries: []entry{file("real.ics", "x"), hardlink("calendar.ics", "real.ics")},
			name:    "calendar.ics",
			err:     ErrUnsupportedEntry, message: "'calendar.ics' is a hard link, not a regular file",
		},
		"a file over the limit": {
			entries: []entry{file("cal.ics", "123456")},
			name:    "cal.ics", maxSize: 5,
			err: ErrTooLarge, message: "'cal.ics' is 6 bytes, the limit is 5",
		},
		"a name that climbs out": {
			entries: []entry{file("cal.ics", "x")},
			name:    "freeze/../../cal.ics",
			err:     ErrUnsafePath, message: "'freeze/../../cal.ics' climbs out of the target",
		},
		"an absolute name": {
			entries: []entry{file("etc/passwd", "x")},
			name:    "/etc/passwd",
			err:     ErrUnsafePath, message: "'/etc/passwd' is an absolute path",
		},
		"the root": {
			entries: []entry{file("cal.ics", "x")},
			name:    "./",
			err:     ErrUnsupportedEntry, message: "'./' is the root of the artifact, not a file",
		},
		"an archive with an entry that climbs out, elsewhere": {
			entries: []entry{file("cal.ics", "x"), file("../../etc/cron.d/x", "x")},
			name:    "cal.ics",
			err:     ErrUnsafePath, message: "'../../etc/cron.d/x' climbs out",
		},
		"an archive over the content limit": {
			entries: []entry{file("cal.ics", "x"), file("big", strings.Repeat("x", 100))},
			name:    "cal.ics", limits: Limits{MaxSize: 50},
			err: ErrTooLarge, message: "exceeds 50 bytes at 'big'",
		},
		"an archive with too many entries": {
			entries: []entry{file("a", "a"), file("b", "b"), file("cal.ics", "x")},
			name:    "cal.ics", limits: Limits{MaxFiles: 2},
			err: ErrTooManyFiles, message: "more than 2 entries",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			maxSize := tc.maxSize
			if maxSize == 0 {
				maxSize = 1 << 20
			}
			data, err := readFile(bytes.NewReader(buildTarGz(t, tc.entries...)), tc.name, maxSize, tc.limits)
			if tc.err != nil {
				g.Expect(errors.Is(err, tc.err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.message))
				g.Expect(data).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).To(Equal(tc.want))
		})
	}
}

// Not an artifact: ReadFile says so rather than reporting a missing file.
func TestReadFileOfGarbage(t *testing.T) {
	g := NewWithT(t)
	_, err := ReadFile(strings.NewReader("<html>502 Bad Gateway</html>"), "cal.ics", 1<<20)
	g.Expect(err).To(MatchError(HavePrefix("artifact is not a gzip archive")))
	_, err = ReadFile(bytes.NewReader(gzipBytes(t, bytes.Repeat([]byte{0xff}, 1024))), "cal.ics", 1<<20)
	g.Expect(err).To(MatchError(HavePrefix("artifact is not a valid tar archive")))
}
