package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/fluxyaml"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// Commands come from Git: they never run as root, even when the controller does; each session
// runs as a user of the runner's range (and group of the same id), two sessions at once as two
// users.
func TestCommandsDoNotRunAsRoot(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	tree := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	a, b := newSession(t, tree, runner.Options{}), newSession(t, tree, runner.Options{})
	idsA := strings.Fields(run(g, a, "id -u; id -g; id -G", ".", nil))
	idsB := strings.Fields(run(g, b, "id -u; id -g; id -G", ".", nil))
	for _, ids := range [][]string{idsA, idsB} {
		g.Expect(ids).To(HaveLen(3), "no supplementary groups")
		uid, err := strconv.Atoi(ids[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(uid).To(BeNumerically(">=", runner.LocalUserSpace.First))
		g.Expect(uid).To(BeNumerically("<=", runner.LocalUserSpace.Last))
		g.Expect(ids[1]).To(Equal(ids[0]))
		g.Expect(ids[2]).To(Equal(ids[0]))
	}
	g.Expect(idsA[0]).NotTo(Equal(idsB[0]), "two sessions at once run as two users")
}

// The command's user cannot read the controller's files, the local tree included: it works on
// its copy only.
func TestCommandsCannotReadTheControllersFiles(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	local := newTree(t, map[string]string{"secret.yaml": "token: hunter2\n"})
	g.Expect(os.Chmod(local, 0o700)).To(Succeed())
	s := newSession(t, local, runner.Options{})

	_, err := s.Run(context.Background(), fluxyaml.Command{Command: "cat " + filepath.Join(local, "secret.yaml")}, ".", nil)
	var ce *fluxyaml.CommandError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "the command read the local tree: %v", err)
	g.Expect(ce.Stderr).To(ContainSubstring("Permission denied"))
	// Its own copy it can read.
	g.Expect(run(g, s, "cat secret.yaml", ".", nil)).To(Equal("token: hunter2\n"))
}

// What a command does to its tree stays in the session: the local tree and a second session
// on the same local tree keep the original.
func TestTreeChangesStayInTheSession(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{"app.yaml": "v: 1\n", "gone.yaml": "g: 1\n"})
	s1 := newSession(t, local, runner.Options{})
	s2 := newSession(t, local, runner.Options{})
	// s2 uploads its copy before s1 changes anything.
	g.Expect(run(g, s2, "cat app.yaml", ".", nil)).To(Equal("v: 1\n"))

	run(g, s1, "echo 'v: 2' > app.yaml; rm gone.yaml; echo new > new.yaml; mkdir d", ".", nil)
	g.Expect(run(g, s1, "cat app.yaml; ls", ".", nil)).To(Equal("v: 2\napp.yaml\nd\nnew.yaml\n"))

	g.Expect(os.ReadFile(filepath.Join(local, "app.yaml"))).To(Equal([]byte("v: 1\n")))
	g.Expect(filepath.Join(local, "gone.yaml")).To(BeARegularFile())
	g.Expect(filepath.Join(local, "new.yaml")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(local, "d")).NotTo(BeAnExistingFile())

	g.Expect(run(g, s2, "cat app.yaml; ls", ".", nil)).To(Equal("v: 1\napp.yaml\ngone.yaml\n"))
	// A session opened after the change uploads the local tree, not s1's copy.
	s3 := newSession(t, local, runner.Options{})
	g.Expect(run(g, s3, "cat app.yaml; ls", ".", nil)).To(Equal("v: 1\napp.yaml\ngone.yaml\n"))
}

// Closing a session removes its directory in the runner (tree, HOME, TMPDIR): nothing of a
// repository stays behind.
func TestCloseRemovesTheJobDirectory(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{"app.yaml": "v: 1\n"})
	s := newSession(t, local, runner.Options{})
	tree := strings.TrimSpace(run(g, s, "echo x > made-by-command; pwd -P", ".", nil))
	job := filepath.Dir(tree)
	g.Expect(filepath.Base(tree)).To(Equal("tree"))
	g.Expect(filepath.Join(tree, "made-by-command")).To(BeARegularFile(), "not the session's tree")

	g.Expect(s.Close()).To(Succeed())
	g.Eventually(func() bool { _, err := os.Lstat(job); return os.IsNotExist(err) }).Should(BeTrue(), "%s outlived its session", job)
	// The runner goes on serving.
	g.Expect(run(g, newSession(t, local, runner.Options{}), "cat app.yaml", ".", nil)).To(Equal("v: 1\n"))
}

// A command holds no descriptor of the runner: in particular not the session's connection to
// the controller, on which it could forge the runner's replies (a command's output, the list of
// changed files).
func TestCommandsDoNotInheritTheSessionConnection(t *testing.T) {
	g := NewWithT(t)
	s := newSession(t, newTree(t, map[string]string{"a.yaml": "a: 1\n"}), runner.Options{})
	fds := run(g, s, `for fd in /proc/$$/fd/*; do echo "${fd##*/} $(readlink "$fd")"; done`, ".", nil)
	g.Expect(fds).NotTo(ContainSubstring("socket:"), "descriptors of the command:\n%s", fds)
}

// A session's tree and HOME are private to it: a command of another session, on another
// repository, cannot read them (nor, by the same token, change them).
func TestSessionsCannotReadEachOther(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	a := newSession(t, newTree(t, map[string]string{"secret.yaml": "token: of-repo-a\n"}), runner.Options{})
	b := newSession(t, newTree(t, map[string]string{"b.yaml": "b: 1\n"}), runner.Options{})
	run(g, a, `echo "password: of-a" > "$HOME/.netrc"`, ".", nil)
	// b's command looks next to its own job directory, where the other sessions' are.
	out := run(g, b, `cat ../../*/tree/secret.yaml ../../*/home/.netrc 2>/dev/null; true`, ".", nil)
	g.Expect(out).NotTo(ContainSubstring("of-repo-a"))
	g.Expect(out).NotTo(ContainSubstring("of-a"))
	// Nor when it knows where they are (as /proc would tell a process of the same user), nor can
	// it write there.
	treeA := strings.TrimSpace(run(g, a, "pwd -P", ".", nil))
	out = run(g, b, `cat "$A/secret.yaml" 2>&1; { echo x > "$A/new.yaml"; } 2>&1; true`, ".", map[string]string{"A": treeA})
	g.Expect(out).NotTo(ContainSubstring("of-repo-a"))
	g.Expect(strings.Count(out, "Permission denied")).To(BeNumerically(">=", 2), out)
	g.Expect(run(g, a, "ls", ".", nil)).To(Equal("secret.yaml\n"))
}
