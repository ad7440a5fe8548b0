package testserver_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// fatalRecorder is a testing.TB whose Fatal records the message instead of stopping, so the
// failure RequireGit reports can be checked.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Fatal(args ...any) {
	for _, a := range args {
		f.fatal += a.(string)
	}
}

func TestRequireGitFailsWithoutGit(t *testing.T) {
	g := NewWithT(t)
	rec := &fatalRecorder{TB: t}
	testserver.RequireGit(rec)
	g.Expect(rec.fatal).To(BeEmpty())

	t.Setenv("PATH", t.TempDir())
	testserver.RequireGit(rec)
	g.Expect(rec.fatal).To(Equal("the git binary is needed: install git (apt-get install git)"))
}
