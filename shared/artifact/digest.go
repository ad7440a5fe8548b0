package artifact

import (
	_ "crypto/sha256" // registers sha256 for go-digest
	_ "crypto/sha512" // registers sha384 and sha512 for go-digest
	"fmt"

	"github.com/opencontainers/go-digest"
)

// ParseDigest parses an `<algorithm>:<hex>` digest and checks that its algorithm is one the
// source-controller may use.
func ParseDigest(s string) (digest.Digest, error) {
	d, err := digest.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w '%s': %v", ErrUnsupportedDigest, s, err)
	}
	switch d.Algorithm() {
	case digest.SHA256, digest.SHA384, digest.SHA512:
		return d, nil
	}
	return "", fmt.Errorf("%w '%s': algorithm '%s' is not one of sha256, sha384, sha512",
		ErrUnsupportedDigest, s, d.Algorithm())
}
