package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/manifest-generator/internal/runner"
)

// A command runs in a copy of the uploaded tree, in the sub-directory it was asked to run in.
func TestSessionRunsInACopyOfTheTree(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{
		"root.yaml":             "kind: Root\n",
		"staging/app.yaml":      "kind: App\n",
		"staging/deep/sub.yaml": "kind: Sub\n",
	})
	s := newSession(t, local, runner.Options{})

	// The output is what the command printed, from the files of the tree.
	g.Expect(run(g, s, "cat app.yaml deep/sub.yaml", filepath.Join(local, "staging"), nil)).To(Equal("kind: App\nkind: Sub\n"))

	// The working directory is the requested one, inside the runner's copy (not the local tree).
	root := strings.TrimSpace(run(g, s, "pwd -P", local, nil))
	g.Expect(root).NotTo(Equal(local))
	g.Expect(strings.TrimSpace(run(g, s, "pwd -P", filepath.Join(local, "staging"), nil))).To(Equal(root + "/staging"))
	// A relative dir is relative to the tree's root.
	g.Expect(strings.TrimSpace(run(g, s, "pwd -P", "staging/deep", nil))).To(Equal(root + "/staging/deep"))
	g.Expect(run(g, s, "find . | sort", local, nil)).To(Equal(".\n./root.yaml\n./staging\n./staging/app.yaml\n./staging/deep\n./staging/deep/sub.yaml\n"))
}

// The .git directory at the root of a clone never reaches the runner: no command sees its
// configuration (credentials in remote URLs) or history. A .git elsewhere is ordinary content.
func TestSessionDoesNotUploadGitDirectory(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{
		"app.yaml":             "kind: App\n",
		".git/config":          "[remote \"origin\"]\n\turl = https://user:token@example.com/repo\n",
		".git/HEAD":            "ref: refs/heads/main\n",
		"vendor/lib/.git/HEAD": "ref: refs/heads/lib\n",
	})
	s := newSession(t, local, runner.Options{})

	out := run(g, s, "ls -A; test ! -e .git && echo no-git", local, nil)
	g.Expect(out).To(Equal("app.yaml\nvendor\nno-git\n"))
	g.Expect(run(g, s, "cat vendor/lib/.git/HEAD", local, nil)).To(Equal("ref: refs/heads/lib\n"))
	// Still there locally: leaving it out is the upload's doing, not a deletion.
	g.Expect(filepath.Join(local, ".git", "config")).To(BeARegularFile())
}

// Commands see exactly PATH, HOME, TMPDIR, the session's variables and the per-call ones:
// nothing of the controller's environment.
func TestSessionEnvironmentIsExactlyTheAllowedSet(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{"sub/a.yaml": "a: 1\n"})
	s := newSession(t, local, runner.Options{
		Path: "/usr/bin:/bin",
		Env:  map[string]string{"KUSTOMIZE_PLUGIN_HOME": "/plugins", "EMPTY": ""},
	})

	out := run(g, s, "env", filepath.Join(local, "sub"), map[string]string{"FLUX_IMG": "app:v2"})
	g.Expect(out).NotTo(ContainSubstring("hunter2"))
	g.Expect(os.Getenv(canary)).NotTo(BeEmpty(), "the canary must be set for the check above to mean anything")

	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	// The shell itself may export PWD; then it is the working directory.
	if pwd, ok := got["PWD"]; ok {
		g.Expect(pwd).To(HaveSuffix("/sub"))
		delete(got, "PWD")
	}
	g.Expect(got).To(HaveKey("HOME"))
	g.Expect(got).To(HaveKey("TMPDIR"))
	g.Expect(got).To(Equal(map[string]string{
		"PATH":                  "/usr/bin:/bin",
		"HOME":                  got["HOME"],
		"TMPDIR":                got["TMPDIR"],
		"KUSTOMIZE_PLUGIN_HOME": "/plugins",
		"EMPTY":                 "",
		"FLUX_IMG":              "app:v2",
	}))
	// The per-call variables are for that call only.
	g.Expect(run(g, s, `echo "${FLUX_IMG-unset}"`, local, nil)).To(Equal("unset\n"))
}

// Each session has a HOME and a TMPDIR of its own, writable, kept between its commands, and
// deleted when it is closed.
func TestSessionHomeAndTmpdirArePrivate(t *testing.T) {
	g := NewWithT(t)
	local := newTree(t, map[string]string{"a.yaml": "a: 1\n"})
	const show = `test -d "$HOME" && test -w "$HOME" && test -d "$TMPDIR" && test -w "$TMPDIR" && echo "$HOME" && echo "$TMPDIR"`

	s1 := newSession(t, local, runner.Options{})
	s2 := newSession(t, local, runner.Options{})
	dirs1 := strings.Fields(run(g, s1, show, local, nil))
	dirs2 := strings.Fields(run(g, s2, show, local, nil))
	g.Expect(dirs1).To(HaveLen(2))
	g.Expect(dirs2).To(HaveLen(2))
	g.Expect(dirs1[0]).NotTo(Equal(dirs1[1]))
	g.Expect(dirs1).NotTo(ContainElement(BeElementOf(dirs2)), "two sessions share a HOME or TMPDIR")

	// What a command leaves in HOME is there for the session's next command, not for another session.
	run(g, s1, `echo cached > "$HOME/cache"; echo scratch > "$TMPDIR/scratch"`, local, nil)
	g.Expect(run(g, s1, `cat "$HOME/cache" "$TMPDIR/scratch"`, local, nil)).To(Equal("cached\nscratch\n"))
	g.Expect(run(g, s2, `cat "$HOME/cache" 2>/dev/null || echo none`, local, nil)).To(Equal("none\n"))

	// The test process (root, or the runner's own user) can see the runner's directories.
	for _, d := range dirs1 {
		g.Expect(d).To(BeADirectory())
	}
	g.Expect(s1.Close()).To(Succeed())
	for _, d := range dirs1 {
		g.Eventually(func() bool { _, err := os.Lstat(d); return os.IsNotExist(err) }).Should(BeTrue(), "%s outlived its session", d)
	}
	// Closing one session leaves the other alone.
	for _, d := range dirs2 {
		g.Expect(d).To(BeADirectory())
	}
}
