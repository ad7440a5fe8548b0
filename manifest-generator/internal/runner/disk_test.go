package runner_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/proctest"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// diskLimits let a test pass the session's disk limit quickly: 64 MiB, files of up to 16 MiB.
// The commands below write 80 MiB (1.25 times the limit, as 1,250 MiB would pass the default
// 1 GiB) where the measure of the session's directory does not see it.
func diskLimits() runner.Limits {
	l := runner.DefaultLimits
	l.MaxProcesses = 64
	l.MaxDisk = 64 << 20
	l.MaxFileSize = 16 << 20
	l.MaxTimeout = 30 * time.Second
	return l
}

// hideSource writes 80 MiB into files it deletes while it holds them open, after making itself
// undumpable, so that its open files cannot be read by its own user; then it stays.
const hideSource = `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
	static char buf[1 << 20];
	memset(buf, 'x', sizeof buf);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 1;
	for (int i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof name, "hidden-%d", i);
		int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || unlink(name) != 0) return 1;
		for (int j = 0; j < 16; j++) if (write(fd, buf, sizeof buf) != sizeof buf) return 1;
	}
	for (;;) pause();
}
`

// mapSource writes 80 MiB into files that it maps, closes and deletes: the mappings alone hold
// them, and no descriptor shows them; then it stays.
const mapSource = `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
	static char buf[1 << 20];
	memset(buf, 'x', sizeof buf);
	for (int i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof name, "mapped-%d", i);
		int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0) return 1;
		for (int j = 0; j < 16; j++) if (write(fd, buf, sizeof buf) != sizeof buf) return 1;
		if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) return 1;
		if (close(fd) != 0 || unlink(name) != 0) return 1;
	}
	for (;;) pause();
}
`

// The disk limit of a session holds against files its directory walk cannot see: written
// through a directory the session made unreadable to itself, or deleted while still open. What
// cannot be measured counts as over the limit, with an error that says so.
func TestDiskLimitCountsHiddenFiles(t *testing.T) {
	l := startLocal(t, runner.LocalOptions{Limits: diskLimits()})
	const limit = "the session's files are over the runner's limit of 67108864 bytes (--max-session-disk)"
	const write16 = `head -c 16777216 /dev/zero`

	for name, tc := range map[string]struct{ command, want string }{
		"written through a directory it cannot read (0300)": {
			command: `mkdir hidden && chmod 0300 hidden && for i in 1 2 3 4 5; do ` + write16 + ` > hidden/$i; done; sleep 20`,
			want:    limit + ": directory tree/hidden of the session cannot be read: counted as over the limit",
		},
		"written, then hidden in directories made unreadable (0000)": {
			command: `for i in 1 2 3 4 5; do mkdir d$i && ` + write16 + ` > d$i/f && chmod 0 d$i; done; sleep 20`,
			want:    ": directory tree/d1 of the session cannot be read: counted as over the limit",
		},
		"deleted while still open": {
			command: `exec 3<>a 4<>b 5<>c 6<>d 7<>e && rm a b c d e && ` + write16 + ` >&3 && ` + write16 + ` >&4 && ` +
				write16 + ` >&5 && ` + write16 + ` >&6 && ` + write16 + ` >&7; sleep 20`,
			want: limit + ", ",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			ce := runFails(t, g, l, tc.command, 0)
			g.Expect(ce.Error()).To(ContainSubstring(tc.want))
			if name == "deleted while still open" {
				g.Expect(ce.Error()).To(MatchRegexp(`, \d+ bytes of them in files deleted while still open`))
			}
			g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the command was not stopped when it passed the limit")
		})
	}

	// A process that makes itself undumpable hides its descriptors from its own user, and so
	// from the measure: it counts as over the limit.
	t.Run("deleted while open by a process that hides its descriptors", func(t *testing.T) {
		g := NewWithT(t)
		hide := proctest.CompileC(t, "hide", hideSource)
		start := time.Now()
		ce := runFails(t, g, l, `"`+hide+`"`, 0)
		g.Expect(ce.Error()).To(MatchRegexp(`: process \d+ \(hide\) of the session hides its open files \(it is not dumpable\): counted as over the limit`))
		g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the command was not stopped")
	})

	// A file held by a mapping alone cannot be measured (only CAP_SYS_ADMIN may follow
	// /proc/<pid>/map_files): it counts as over the limit.
	t.Run("deleted while mapped", func(t *testing.T) {
		g := NewWithT(t)
		mapper := proctest.CompileC(t, "mapper", mapSource)
		start := time.Now()
		ce := runFails(t, g, l, `"`+mapper+`"`, 0)
		g.Expect(ce.Error()).To(MatchRegexp(`: process \d+ \(mapper\) of the session maps tree/mapped-\d, a deleted file whose size cannot be measured: counted as over the limit`))
		g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the command was not stopped")
	})

	// Within the limit, nothing is counted twice (a file open in two processes), and a deleted
	// file no longer counts once it is closed.
	t.Run("within the limit", func(t *testing.T) {
		g := NewWithT(t)
		s, err := l.Session(newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		defer s.Close()
		// Three processes hold the deleted 16 MiB: counted once, the session holds 48 MiB.
		g.Expect(run(g, s, `exec 3<>a && rm a && `+write16+` >&3 && `+write16+` > b && `+write16+` > c && { sleep 1 & sleep 1 & wait; } && echo ok`, ".", nil)).To(Equal("ok\n"))
		g.Expect(run(g, s, `exec 3<>a && rm a && `+write16+` >&3 && exec 3>&- && `+write16+` > d && sleep 1 && echo ok`, ".", nil)).To(Equal("ok\n"))
	})
}
