package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
)

func TestGarbageCollect(t *testing.T) {
	// Five artifacts, art-0 the newest; ages in hours.
	type tc struct {
		name    string
		ttl     time.Duration
		records int
		ages    []time.Duration // of art-0 .. art-4
		current int
		want    []string // remaining artifacts
	}
	h := time.Hour
	tests := []tc{
		{name: "ttl 0, 2 records: the 2 newest stay", ttl: 0, records: 2, ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h},
			current: 0, want: []string{"art-0", "art-1"}},
		{name: "ttl 1h, files younger: nothing deleted", ttl: h, records: 2,
			ages:    []time.Duration{1 * time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute},
			current: 0, want: []string{"art-0", "art-1", "art-2", "art-3", "art-4"}},
		{name: "ttl 1h: only files both old and beyond the records go", ttl: 90 * time.Minute, records: 2,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 0, want: []string{"art-0", "art-1"}},
		{name: "young files beyond the records stay", ttl: 190 * time.Minute, records: 1,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 0, want: []string{"art-0", "art-1", "art-2"}},
		{name: "current stays even when it is the oldest", ttl: 0, records: 2,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 4, want: []string{"art-0", "art-4"}},
		{name: "records 1 keeps the current only", ttl: 0, records: 1,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 2, want: []string{"art-2"}},
		{name: "records 0 keeps the current only", ttl: 0, records: 0,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 0, want: []string{"art-0"}},
		{name: "more records than files", ttl: 0, records: 10,
			ages: []time.Duration{1 * h, 2 * h, 3 * h, 4 * h, 5 * h}, current: 0, want: []string{"art-0", "art-1", "art-2", "art-3", "art-4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newTestStorage(t, Options{RetentionTTL: tt.ttl, RetentionRecords: tt.records})
			var arts []meta.Artifact
			for i, d := range tt.ages {
				a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", fmt.Sprintf("art-%d", i))
				g.Expect(s.Copy(&a, strings.NewReader(a.Path))).To(Succeed())
				age(t, s.LocalPath(a), d)
				arts = append(arts, a)
			}
			objDir := filepath.Dir(s.LocalPath(arts[0]))
			// Never collected: the latest link and lock files, however old.
			_, err := s.Symlink(arts[tt.current], "latest.tar.gz")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(os.WriteFile(filepath.Join(objDir, "art.lock"), nil, 0o644)).To(Succeed())
			age(t, filepath.Join(objDir, "art.lock"), 10*h)
			// Another object's artifacts are out of reach.
			other := s.NewArtifactFor("GitRepository", testObject("other"), "rev", "old")
			g.Expect(s.Copy(&other, strings.NewReader("x"))).To(Succeed())
			age(t, s.LocalPath(other), 10*h)

			deleted, err := s.GarbageCollect(context.Background(), arts[tt.current], time.Minute)
			g.Expect(err).NotTo(HaveOccurred())

			var remaining []string
			entries, err := os.ReadDir(objDir)
			g.Expect(err).NotTo(HaveOccurred())
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "art-") {
					remaining = append(remaining, e.Name())
				}
			}
			g.Expect(remaining).To(Equal(tt.want))
			g.Expect(deleted).To(HaveLen(len(tt.ages) - len(tt.want)))
			for _, p := range deleted {
				g.Expect(filepath.Dir(p)).To(Equal(objDir))
				g.Expect(slices.Contains(tt.want, filepath.Base(p))).To(BeFalse())
			}
			g.Expect(filepath.Join(objDir, "latest.tar.gz")).To(BeAnExistingFile())
			g.Expect(filepath.Join(objDir, "art.lock")).To(BeAnExistingFile())
			g.Expect(s.ArtifactExist(other)).To(BeTrue())
		})
	}
}

func TestGarbageCollectTemporaryFiles(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{RetentionTTL: time.Hour, RetentionRecords: 2})
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "a.tar.gz")
	g.Expect(s.Copy(&a, strings.NewReader("a"))).To(Succeed())
	dir := filepath.Dir(s.LocalPath(a))
	stale := filepath.Join(dir, ".b.tar.gz.tmp-123")
	fresh := filepath.Join(dir, ".c.tar.gz.tmp-456")
	g.Expect(os.WriteFile(stale, nil, 0o600)).To(Succeed())
	g.Expect(os.WriteFile(fresh, nil, 0o600)).To(Succeed())
	age(t, stale, 2*time.Hour)
	staleLink := filepath.Join(dir, ".latest.tar.gz.tmp-789")
	g.Expect(os.Symlink("a.tar.gz", staleLink)).To(Succeed())
	ts := time.Now().Add(-2 * time.Hour)
	g.Expect(lutimes(staleLink, ts)).To(Succeed())
	deleted, err := s.GarbageCollect(context.Background(), a, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(ConsistOf(stale, staleLink))
	g.Expect(fresh).To(BeAnExistingFile())
	g.Expect(s.ArtifactExist(a)).To(BeTrue())
}

func TestGarbageCollectCancelled(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{RetentionTTL: 0, RetentionRecords: 1})
	var cur meta.Artifact
	for i := range 3 {
		cur = s.NewArtifactFor("GitRepository", testObject("app"), "rev", fmt.Sprintf("a-%d", i))
		g.Expect(s.Copy(&cur, strings.NewReader("x"))).To(Succeed())
		age(t, s.LocalPath(cur), time.Duration(3-i)*time.Hour)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deleted, err := s.GarbageCollect(ctx, cur, 0)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(deleted).To(BeEmpty())
}

func TestGarbageCollectRefusesTheStorageRoot(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	for _, p := range []string{"", "/", "top.tar.gz", "../../top.tar.gz"} {
		_, err := s.GarbageCollect(context.Background(), meta.Artifact{Path: p}, 0)
		g.Expect(err).To(HaveOccurred(), p)
	}
	deleted, err := s.GarbageCollect(context.Background(), meta.Artifact{Path: "gitrepository/default/none/x.tar.gz"}, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeEmpty())
}

// lutimes sets the mtime of a symlink itself.
func lutimes(path string, ts time.Time) error {
	tv := []unix.Timeval{unix.NsecToTimeval(ts.UnixNano()), unix.NsecToTimeval(ts.UnixNano())}
	return unix.Lutimes(path, tv)
}
