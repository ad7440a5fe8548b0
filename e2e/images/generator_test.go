package images_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// triplets are Debian's multiarch library directories.
var triplets = map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

// The manifest-generator image runs the generators' tools from its own files: busybox's sh and
// applets, git, kustomize and helm, each with the libraries of the image only.
func TestManifestGeneratorImageRunsItsTools(t *testing.T) {
	g := NewWithT(t)
	img := readImage(t, "manifest-generator")
	dir := t.TempDir()
	extract(t, img, dir)
	triplet := triplets[runtime.GOARCH]
	g.Expect(triplet).NotTo(BeEmpty(), "no Debian library directory known for %s", runtime.GOARCH)
	libDirs := []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"}

	// Every dynamic executable finds its loader and, transitively, every library it needs in
	// the image's own system directories, where the loader looks (the image has no ld.so.cache).
	var dynamic []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := elf.Open(p)
		if err != nil {
			return nil // not ELF: shell scripts, certificates, templates
		}
		defer f.Close()
		rel := "/" + filepath.ToSlash(strings.TrimPrefix(p, dir+"/"))
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			dynamic = append(dynamic, rel)
			interp := make([]byte, prog.Filesz)
			_, err := prog.ReadAt(interp, 0)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(filepath.Join(dir, string(bytes.TrimRight(interp, "\x00")))).To(BeARegularFile(), "the loader of %s", rel)
			missing := missingLibraries(t, dir, libDirs, path.Base(string(bytes.TrimRight(interp, "\x00"))), p)
			g.Expect(missing).To(BeEmpty(), "libraries of %s", rel)
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dynamic).To(ContainElements("/usr/bin/git", "/usr/lib/git-core/git-remote-http"))

	// Run from the host through the image's loader and libraries (any user may).
	loader := filepath.Join(dir, "lib64", "ld-linux-x86-64.so.2")
	if runtime.GOARCH != "amd64" {
		loader = filepath.Join(dir, "lib", "ld-linux-aarch64.so.1")
	}
	var libPath []string
	for _, d := range libDirs[:2] {
		libPath = append(libPath, filepath.Join(dir, d))
	}
	run := func(file string, args ...string) string {
		t.Helper()
		cmd := exec.Command(loader, append([]string{"--library-path", strings.Join(libPath, ":"), filepath.Join(dir, file)}, args...)...)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s %s: %s", file, args, out)
		return string(out)
	}
	versions := toolVersions(t)
	g.Expect(run("/usr/bin/git", "--version")).To(HavePrefix("git version 2."))
	g.Expect(run("/usr/local/bin/kustomize", "version")).To(ContainSubstring(versions["KUSTOMIZE_VERSION"]))
	helmVersion, _, _ := strings.Cut(strings.TrimSpace(run("/usr/local/bin/helm", "version", "--short")), "+")
	g.Expect(helmVersion).To(Equal(versions["HELM_VERSION"]))

	// busybox is static: its sh runs its applets through the links of /bin.
	sh := exec.Command(filepath.Join(dir, "bin", "sh"), "-c", `echo sluice | tr a-z A-Z; printf '%s\n' b a | sort | head -n1; id -u >/dev/null && echo ok`)
	sh.Env = []string{"PATH=" + filepath.Join(dir, "bin")}
	out, err := sh.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(Equal("SLUICE\na\nok\n"))

	t.Run("a session in the image", func(t *testing.T) { generatorSession(t, dir) })
}

// missingLibraries follows the DT_NEEDED entries of an ELF file through the image's library
// directories and returns those found in none. The loader itself (libc needs it) is loaded
// already.
func missingLibraries(t *testing.T, root string, libDirs []string, loader, file string) []string {
	t.Helper()
	var missing []string
	seen := map[string]bool{loader: true}
	queue := []string{file}
	for len(queue) > 0 {
		f, err := elf.Open(queue[0])
		queue = queue[1:]
		if err != nil {
			t.Fatal(err)
		}
		needed, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			found := ""
			for _, d := range libDirs {
				if p := filepath.Join(root, d, lib); isFile(p) {
					found = p
					break
				}
			}
			if found == "" {
				missing = append(missing, lib)
				continue
			}
			queue = append(queue, found)
		}
	}
	return missing
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// generatorSession runs what a .flux.yaml session runs, as the runner runs it: a user of
// --job-users, in a private directory under /work, with the PATH of --generator-path and
// nothing but the image's files: git clones over HTTPS, kustomize builds a local and a remote
// base (through git), helm renders a chart.
func generatorSession(t *testing.T, dir string) {
	requireRoot(t)
	g := NewWithT(t)
	addDevices(t, dir)
	srv := testserver.NewGitServer(t, testserver.Options{TLS: true})
	repo := srv.NewRepo(t, "sluice/app")
	repo.Commit(t, "generators", map[string]string{
		"kustomization.yaml":        "resources:\n- cm.yaml\n",
		"cm.yaml":                   configMap("from-kustomize"),
		"remote/kustomization.yaml": "resources:\n- cm.yaml\n",
		"remote/cm.yaml":            configMap("from-remote-base"),
		"chart/Chart.yaml":          "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"chart/templates/cm.yaml":   configMap("from-{{ .Release.Name }}"),
	})

	const uid, gid = 100000, 100000 // the first of the Deployment's --job-users
	work := filepath.Join(dir, "work", "job-1")
	g.Expect(os.MkdirAll(work, 0o700)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(work, "ca.pem"), srv.CAPEM(), 0o644)).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(dir, "work"), 0o711)).To(Succeed())
	g.Expect(os.Chown(work, uid, gid)).To(Succeed())

	script := `set -e
git clone -q "$REPO" app
cd app
kustomize build .
helm template chart ./chart
kustomize build "$REPO//remote?ref=master"
`
	env := []string{
		"PATH=" + generatorPath(t, readDeployment(t, "manifest-generator")),
		"HOME=/work/job-1", "TMPDIR=/work/job-1",
		"GIT_SSL_CAINFO=/work/job-1/ca.pem", "REPO=" + repo.HTTPURL(),
	}
	out, err := inImage(dir, uid, gid, "/work/job-1", env, "/bin/sh", "-c", script)
	g.Expect(err).NotTo(HaveOccurred(), out)
	for _, name := range []string{"from-kustomize", "from-chart", "from-remote-base"} {
		g.Expect(out).To(ContainSubstring("name: "+name), out)
	}
	// The image's files are root's: a session cannot change the tools the next one runs.
	out, err = inImage(dir, uid, gid, "/work/job-1", env, "/bin/sh", "-c", "echo x >> /usr/local/bin/kustomize")
	var exitErr *exec.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), out)
	g.Expect(out).To(ContainSubstring("Permission denied"))
}

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
}

// toolVersions reads the pinned versions of e2e/tools/versions.mk.
func toolVersions(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "e2e", "tools", "versions.mk"))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":="); ok && !strings.HasPrefix(l, "#") {
			versions[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return versions
}
