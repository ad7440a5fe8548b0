package status

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"failed to resolve the revision of 'https://bob:s3cret@git.example.com/repo.git': 401": "failed to resolve the revision of 'https://bob:xxxxx@git.example.com/repo.git': 401",
		"clone of https://ghp_abcdef123@github.com/org/repo failed":                            "clone of https://xxxxx@github.com/org/repo failed",
		"oci://user:p%40ss@registry.example.com/app and http://a:b@c.d/e":                      "oci://user:xxxxx@registry.example.com/app and http://a:xxxxx@c.d/e",
		"ssh://git@github.com/org/repo.git stays as it is":                                     "ssh://git@github.com/org/repo.git stays as it is",
		"no URL here: user@example.com, https://example.com/a@b is a path, not credentials":    "no URL here: user@example.com, https://example.com/a@b is a path, not credentials",
	} {
		NewWithT(t).Expect(Redact(in)).To(Equal(want), in)
	}
}

// What Finalize returns, and what controller-runtime logs, is redacted, and a terminal error
// stays terminal through it.
func TestRedactedErrorUnwraps(t *testing.T) {
	g := NewWithT(t)
	err := redacted(reconcile.TerminalError(fmt.Errorf("fetching 'https://bob:s3cret@host/x': %w", errors.New("401"))))
	g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(UserMessage(err)).To(Equal("fetching 'https://bob:xxxxx@host/x': 401"))
}
