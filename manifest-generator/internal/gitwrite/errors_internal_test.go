package gitwrite

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gitauth"
)

func TestBranchMovedAndRefused(t *testing.T) {
	for _, tc := range []struct {
		msg            string
		moved, refused bool
	}{
		{"non-fast-forward update: refs/heads/main", true, false},
		{"command error on refs/heads/main: failed to update ref", true, true},
		{"command error on refs/heads/main: failed to lock", true, true},
		{"command error on refs/heads/main: non-fast-forward", true, true},
		{"command error on refs/heads/main: fetch first", true, true},
		{"command error on refs/heads/main: pre-receive hook declined", false, true},
		{"command error on refs/heads/main: protected branch hook declined", false, true},
		{"unpack error: index-pack abnormal exit", false, true},
		{"authentication required", false, false},
	} {
		g := NewWithT(t)
		g.Expect(branchMoved(errors.New(tc.msg))).To(Equal(tc.moved), tc.msg)
		g.Expect(refused(errors.New(tc.msg))).To(Equal(tc.refused), tc.msg)
	}
}

func TestServerMessages(t *testing.T) {
	g := NewWithT(t)
	out := "Resolving deltas:  50% (1/2)\rResolving deltas: 100% (2/2), done.\n" +
		"GL-HOOK-ERR: protected\n\nerror: hook declined to update refs/heads/main\n"
	g.Expect(serverMessages(out)).To(Equal("GL-HOOK-ERR: protected; error: hook declined to update refs/heads/main"))
	g.Expect(serverMessages("")).To(BeEmpty())
	long := serverMessages(fmt.Sprintf("%03000d", 0))
	g.Expect(len(long)).To(BeNumerically("<", 2010))
}

// Secrets of the options never reach an error's text; the redacted error still matches the
// sentinels of the original.
func TestRedact(t *testing.T) {
	g := NewWithT(t)
	r := newRedactor(Options{
		URL:  "https://bob:url%2Fpass@example.com/repo.git",
		Auth: &gitauth.Auth{Method: &githttp.BasicAuth{Username: "bob", Password: "basic-pass"}},
	})
	err := r.redact(fmt.Errorf("GET https://bob:url%%2Fpass@example.com with url/pass and basic-pass: %w", transport.ErrAuthenticationRequired))
	g.Expect(err.Error()).To(Equal("GET https://bob:***@example.com with *** and ***: authentication required"))
	g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue())
	g.Expect(errors.Unwrap(err)).To(BeNil())

	token := newRedactor(Options{URL: "https://example.com/repo.git", Auth: &gitauth.Auth{Method: &githttp.TokenAuth{Token: "tok-123"}}})
	g.Expect(token.redact(errors.New("bearer tok-123 refused")).Error()).To(Equal("bearer *** refused"))

	plain := errors.New("nothing secret")
	g.Expect(r.redact(plain)).To(BeIdenticalTo(plain))
	g.Expect(r.redact(nil)).To(BeNil())
	g.Expect(newRedactor(Options{URL: "https://example.com/repo.git"})).To(BeEmpty())
}
