package gitauth_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/gitauth"
)

func TestIsAuthError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("repository not found"), false},
		{fmt.Errorf("clone: %w", transport.ErrAuthenticationRequired), true},
		{fmt.Errorf("clone: %w", transport.ErrAuthorizationFailed), true},
		{fmt.Errorf("%w: bad key", gitauth.ErrInvalidCredentials), true},
		{errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey]"), true},
		{errors.New("ssh: handshake failed: knownhosts: key is unknown"), true},
		{errors.New("ssh: handshake failed: knownhosts: key mismatch"), true},
	} {
		g := NewWithT(t)
		g.Expect(gitauth.IsAuthError(tc.err)).To(Equal(tc.want), fmt.Sprint(tc.err))
	}
}
