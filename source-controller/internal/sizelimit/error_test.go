package sizelimit

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB",
		256 << 20: "256 MiB", 312<<20 + 400<<10: "312.4 MiB", 1 << 30: "1 GiB", 3 << 40: "3 TiB",
	} {
		NewWithT(t).Expect(Format(n)).To(Equal(want), "%d", n)
	}
}

func TestErrorNamesSizeFlagAndLimit(t *testing.T) {
	g := NewWithT(t)
	sentinel := errors.New("too large")
	err := error(&Error{What: "Git clone", Size: 312 << 20, Flag: "--git-max-clone-size", Limit: 256 << 20, Err: sentinel})
	g.Expect(err.Error()).To(Equal("Git clone is 312 MiB, over --git-max-clone-size (256 MiB)"))
	g.Expect(errors.Is(err, sentinel)).To(BeTrue())

	partial := &Error{What: "artifact", Size: 1 << 20, Partial: true, Flag: "--artifact-max-size", Limit: 1 << 20}
	g.Expect(partial.Error()).To(Equal("artifact is more than 1 MiB, over --artifact-max-size (1 MiB)"))

	// Sizes that round to the same figure are written in bytes.
	close := &Error{What: "OCI layer", Size: 1<<20 + 1, Flag: "--oci-max-layer-size", Limit: 1 << 20}
	g.Expect(close.Error()).To(Equal("OCI layer is 1048577 bytes, over --oci-max-layer-size (1048576 bytes)"))
}
