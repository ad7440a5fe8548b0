package index

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCacheResolvesLikeResolve(t *testing.T) {
	g := NewWithT(t)
	compact, _ := convertFile(t, writeYAML(fixtureIndex(), yamlStyle{helm: true}))
	c := NewCache(2, time.Hour)
	var hits, misses int
	c.Events = func(hit bool) {
		if hit {
			hits++
		} else {
			misses++
		}
	}
	for _, rng := range []string{"", "6.3.5", "6.x", ">=6.0.0 <6.3.0"} {
		want, err := Resolve(compact, "podinfo", rng)
		g.Expect(err).NotTo(HaveOccurred())
		got, err := c.Resolve(compact, "podinfo", rng)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want), rng)
	}
	_, err := c.Resolve(compact, "podinfo", "9.*")
	g.Expect(err).To(MatchError("no 'podinfo' chart with version matching '9.*' found"))
	g.Expect(misses).To(Equal(1), "the index is opened once")
	g.Expect(hits).To(Equal(4))

	var none *Cache = NewCache(0, time.Hour)
	g.Expect(none).To(BeNil(), "size 0 disables the cache")
	got, err := none.Resolve(compact, "podinfo", "6.3.5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Version).To(Equal("6.3.5"))
}

// A full cache evicts the least recently used index; entries expire ttl after their last use.
func TestCacheEvictsAndExpires(t *testing.T) {
	g := NewWithT(t)
	compact, _ := convertFile(t, writeYAML(fixtureIndex(), yamlStyle{helm: true}))
	paths := make([]string, 3)
	for i := range paths {
		paths[i] = t.TempDir() + "/index.idx"
		data, err := os.ReadFile(compact)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(paths[i], data, 0o644)).To(Succeed())
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCache(2, 10*time.Minute)
	c.clock = clk
	misses := 0
	c.Events = func(hit bool) {
		if !hit {
			misses++
		}
	}
	resolve := func(p string) {
		_, err := c.Resolve(p, "podinfo", "")
		g.Expect(err).NotTo(HaveOccurred())
	}
	resolve(paths[0])
	resolve(paths[1])
	resolve(paths[0]) // paths[1] is now the least recently used
	resolve(paths[2]) // full: evicts paths[1], not a refusal
	g.Expect(c.Len()).To(Equal(2))
	g.Expect(misses).To(Equal(3))
	resolve(paths[0])
	g.Expect(misses).To(Equal(3), "paths[0] stayed")
	resolve(paths[1])
	g.Expect(misses).To(Equal(4), "paths[1] was evicted")

	clk.SetTime(clk.Now().Add(9 * time.Minute))
	resolve(paths[1]) // refreshes its TTL
	clk.SetTime(clk.Now().Add(5 * time.Minute))
	g.Expect(c.Purge()).To(Equal(1), "paths[0] expired; paths[1] was used 5 minutes ago")
	g.Expect(c.Len()).To(Equal(1))
	clk.SetTime(clk.Now().Add(10 * time.Minute))
	resolve(paths[1])
	g.Expect(misses).To(Equal(5), "an expired entry is read again")
}
