package build

import (
	"context"
	"errors"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// A generator without spec.egress opens no network socket: fetching a URL (here the artifact
// server's own) fails the build with the command's "Permission denied". spec.egress where the
// controller allows none (--session-egress=false) needs a change of the object: terminal,
// naming the flag, and no command runs.
func TestBuildEgress(t *testing.T) {
	g := NewWithT(t)
	srv := serveArtifacts(t)
	art := srv.publish(t, "r1", writeTree(t, map[string]string{
		".flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: bash -c 'exec 3<>/dev/tcp/127.0.0.1/"$PORT" && echo connected >&2'; exit 3
`,
	}))
	u, err := url.Parse(srv.URL)
	g.Expect(err).NotTo(HaveOccurred())
	allowingRunner := *testRunner
	allowingRunner.AllowEgress = true
	allowing := newBuilder(t, Options{Runner: &allowingRunner})
	spec := specOf("./", "PORT", u.Port())

	_, err = allowing.Build(context.Background(), testOwner, art, spec)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
	g.Expect(ce.Stderr).To(ContainSubstring("Permission denied"))
	g.Expect(ce.Stderr).NotTo(ContainSubstring("connected"))

	spec.Egress = true
	_, err = allowing.Build(context.Background(), testOwner, art, spec)
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
	g.Expect(ce.Stderr).To(ContainSubstring("connected"))

	refusing := *testRunner
	refusing.AllowEgress = false
	b := newBuilder(t, Options{Runner: &refusing})
	_, err = b.Build(context.Background(), testOwner, art, spec)
	g.Expect(errors.Is(err, runner.ErrEgressNotAllowed)).To(BeTrue(), "%v", err)
	g.Expect(IsTerminal(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("--session-egress=false"))
}
