package builder

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDecodeSimpleAgreesWithYAML guards the fast path of typed values: for
// every string it accepts it must give exactly what the YAML decoder gives.
func TestDecodeSimpleAgreesWithYAML(t *testing.T) {
	g := NewWithT(t)
	corpus := []string{
		"", "true", "false", "True", "FALSE", "yes", "Yes", "YES", "no", "No", "y", "Y", "n", "N",
		"on", "On", "ON", "off", "Off", "null", "Null", "NULL", "~", "nil",
		"0", "-0", "7", "-7", "42", "007", "0x1F", "0o17", "1_000", "+1", "1e3", "1.5", "-", "--1",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"team1", "Team-One", "a/b.c_d", "podinfo-team1", "e5", "inf", ".inf", ".nan", "NaN", "Infinity",
		"6.7.x", "a:b", "a: b", "a #b", "a b", "[a]", "{a: b}", "*", "&a", "!tag", "%x", "@x", "`x`",
		`"6.7.x"`, `""`, `"a b"`, `" padded "`, `"a\"b"`, `"tab\there"`, `"é"`, `"x`, `"`, `'x'`,
		"2024-01-01", "12:30", "1:20:30", "<<", "---", "...", "a\nb", " team1", "team1 ",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`abnoyNOYTFtrue0123456789-+._/:#"\ e~`)
	for range 20000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		corpus = append(corpus, string(b))
	}
	accepted := 0
	for _, s := range corpus {
		fast, ok := decodeSimple(s)
		if !ok {
			continue
		}
		accepted++
		slow, err := decodeYAML([]byte(s))
		g.Expect(err).NotTo(HaveOccurred(), "YAML rejects %q, the fast path accepts it", s)
		if slow == nil {
			g.Expect(fast).To(BeNil(), "decoding %q", s)
			continue
		}
		g.Expect(fast).To(Equal(slow), "decoding %q", s)
	}
	g.Expect(accepted).To(BeNumerically(">", 1000)) // the fast path is exercised
}

func TestNormalizeNumbers(t *testing.T) {
	g := NewWithT(t)
	v, err := decodeYAML([]byte("a: 2.0\nb: 1e3\nc: 1.5\nd: [3, 4.25]\ne: 1e30\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal(map[string]any{
		"a": int64(2), "b": int64(1000), "c": 1.5, "d": []any{int64(3), 4.25}, "e": 1e30,
	}))
}
