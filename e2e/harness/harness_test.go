package harness

import (
	"bytes"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// Ports are never handed out twice, and come from below the ephemeral range, where neither
// bind(":0") nor outgoing connections take them.
func TestFreePortsAreUniqueAndOutsideTheEphemeralRange(t *testing.T) {
	g := NewWithT(t)
	low, high := portRange()
	g.Expect(high - low).To(Equal(12000))
	seen := map[int]bool{}
	for range 50 {
		ports, err := FreePorts(3)
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range ports {
			g.Expect(seen).NotTo(HaveKey(p))
			seen[p] = true
			g.Expect(p).To(And(BeNumerically(">=", low), BeNumerically("<", high)))
		}
	}
}

func TestLastFlagIsTheOnePflagKeeps(t *testing.T) {
	g := NewWithT(t)
	args := []string{"--storage-addr=127.0.0.1:1", "--log-level", "debug", "--storage-addr", "127.0.0.1:2"}
	v, ok := lastFlag(args, "storage-addr")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal("127.0.0.1:2"))
	v, ok = lastFlag(args, "log-level")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal("debug"))
	_, ok = lastFlag(args, "storage")
	g.Expect(ok).To(BeFalse())
}

// MainTB runs cleanups last first, removes its temporary directories, and turns a fatal error
// into a panic carrying the message.
func TestMainTB(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	tb := NewMainTB(&out)
	var order []int
	tb.Cleanup(func() { order = append(order, 1) })
	tb.Cleanup(func() { order = append(order, 2) })
	dir := tb.TempDir()
	g.Expect(dir).To(BeADirectory())
	tb.Logf("hello %s", "world")
	g.Expect(out.String()).To(Equal("hello world\n"))
	g.Expect(tb.Failed()).To(BeFalse())
	g.Expect(func() { tb.Fatalf("boom %d", 1) }).To(PanicWith("boom 1"))
	g.Expect(tb.Failed()).To(BeTrue())
	tb.Close()
	g.Expect(order).To(Equal([]int{2, 1}))
	_, err := os.Stat(dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue())
	g.Expect(tb.Context().Err()).To(HaveOccurred(), "the context ends with Close")
}

func TestTailMatching(t *testing.T) {
	g := NewWithT(t)
	path := t.TempDir() + "/c.log"
	g.Expect(os.WriteFile(path, []byte("a ns1\nb ns2\nc ns1\nd\n"), 0o644)).To(Succeed())
	g.Expect(tail(path, 0, nil)).To(Equal("a ns1\nb ns2\nc ns1\nd"))
	g.Expect(tail(path, 2, nil)).To(Equal("c ns1\nd"))
	g.Expect(tail(path, 1, []string{"ns1"})).To(Equal("c ns1"))
	g.Expect(strings.Split(tail(path, 5, []string{"ns1", "ns2"}), "\n")).To(HaveLen(3))
}
