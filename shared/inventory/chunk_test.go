package inventory

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/sluice-gitops/sluice/shared/apply"
)

// entries are n inventory entries whose names do not compress away (a digest each), as many
// tenants' objects would not.
func entries(n int) []apply.Entry {
	out := make([]apply.Entry, n)
	for i := range out {
		out[i] = apply.Entry{ID: fmt.Sprintf("tenant-%d_app-%x_apps_Deployment", i%97, sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})), Version: "v1"}
	}
	return out
}

// An inventory too large for one ConfigMap is split into several, in order, each within the
// bound, and read back whole; the chunks of two owners never share a name.
func TestEncodeSplitsAndDecodes(t *testing.T) {
	in := entries(60_000)
	chunks, err := encode("uid-a", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 {
		t.Fatalf("%d entries in %d chunk(s): want several", len(in), len(chunks))
	}
	var out []apply.Entry
	for _, c := range chunks {
		if len(c.data) > maxChunkBytes {
			t.Errorf("chunk %s holds %d bytes, over %d", c.name, len(c.data), maxChunkBytes)
		}
		if !isChunkName(c.name) {
			t.Errorf("%s is not a chunk's name", c.name)
		}
		part, err := decode("uid-a", c.name, c.data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, part...)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d entries back, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Fatalf("entry %d: %v, want %v", i, out[i], in[i])
		}
	}
	other, err := encode("uid-b", in)
	if err != nil {
		t.Fatal(err)
	}
	if other[0].name == chunks[0].name {
		t.Error("two owners' chunks of the same entries share a name")
	}
	// Another owner's chunk is not this one's.
	if _, err := decode("uid-b", chunks[0].name, chunks[0].data); err == nil {
		t.Error("a chunk of uid-a was read as uid-b's")
	}
}

// Only a status made of chunk references alone is a spilled one.
func TestChunkNames(t *testing.T) {
	name := namePrefix + fmt.Sprintf("%x", sha256.Sum256(nil))
	for _, tc := range []struct {
		status []apply.Entry
		want   bool
	}{
		{nil, false},
		{[]apply.Entry{ref("ns", name)}, true},
		{[]apply.Entry{ref("ns", name), {ID: "ns_app__ConfigMap", Version: "v1"}}, false},
		{[]apply.Entry{ref("other", name)}, false},
		{[]apply.Entry{{ID: "ns_" + name + "_apps_Deployment", Version: "v1"}}, false},
		{[]apply.Entry{ref("ns", namePrefix+"abc")}, false},
	} {
		if _, got := chunkNames("ns", tc.status); got != tc.want {
			t.Errorf("chunkNames(%v) = %v, want %v", tc.status, got, tc.want)
		}
	}
}
