package images

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// GeneratorPath is the PATH of the .flux.yaml commands in the manifest-generator image (its
// Deployment's --generator-path): kustomize and helm in /usr/local/bin, git in /usr/bin, the
// shell and its applets in /bin.
const GeneratorPath = "/usr/local/bin:/usr/bin:/bin"

// The host programs the manifest-generator image carries, from Debian's packages.
const (
	hostBusybox   = "/usr/bin/busybox"  // busybox-static
	hostGit       = "/usr/bin/git"      // git
	hostGitCore   = "/usr/lib/git-core" // git's helpers (git --exec-path)
	hostTemplates = "/usr/share/git-core/templates"
)

// gitHelpers are the programs git runs from its exec path for what the generators do with it
// (kustomize's remote bases, helm's Git dependencies, scripts): HTTP(S) transports, the
// local-clone and fetch servers, submodules (a shell script and its libraries). Names map to
// symlink targets, or to "" for a copy of the host file.
var gitHelpers = map[string]string{
	"git":                   "../../bin/git",
	"git-upload-pack":       "git",
	"git-receive-pack":      "git",
	"git-upload-archive":    "git",
	"git-remote-http":       "",
	"git-remote-https":      "git-remote-http",
	"git-remote-ftp":        "git-remote-http",
	"git-remote-ftps":       "git-remote-http",
	"git-submodule":         "",
	"git-sh-setup":          "",
	"git-sh-i18n":           "",
	"git-sh-i18n--envsubst": "",
}

// shellAndGit is the layer of the manifest-generator image below its tools: busybox as /bin/sh
// with a link per applet in /bin (`busybox --install -s` style), and git with its helpers and
// templates.
func shellAndGit() (*tree, error) {
	t := newTree()
	if err := t.copy("/bin/busybox", hostBusybox); err != nil {
		return nil, fmt.Errorf("busybox is needed for the manifest-generator image's shell (apt-get install busybox-static): %w", err)
	}
	out, err := exec.Command(hostBusybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			t.symlink("/bin/"+applet, "busybox")
		}
	}
	if !t.has("/bin/sh") {
		return nil, fmt.Errorf("%s has no sh applet", hostBusybox)
	}

	if err := t.copy("/usr/bin/git", hostGit); err != nil {
		return nil, fmt.Errorf("git is needed for the manifest-generator image (apt-get install git): %w", err)
	}
	names := make([]string, 0, len(gitHelpers))
	for name := range gitHelpers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := "/usr/lib/git-core/" + name
		if target := gitHelpers[name]; target != "" {
			t.symlink(p, target)
		} else if err := t.copy(p, filepath.Join(hostGitCore, name)); err != nil {
			return nil, fmt.Errorf("git's helper %s: %w", name, err)
		}
	}
	// Without its templates `git init` and `git clone` warn on every run.
	err = filepath.WalkDir(hostTemplates, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(hostTemplates, p)
		dst := filepath.ToSlash(filepath.Join("/usr/share/git-core/templates", rel))
		switch {
		case d.IsDir():
			t.dir(dst, 0o755, 0, 0)
			return nil
		case d.Type().IsRegular():
			return t.copy(dst, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("git's templates: %w", err)
	}
	return t, nil
}

// generatorTools is the layer of kustomize and helm, the pinned builds of bin/.
func generatorTools(bin string) (*tree, error) {
	t := newTree()
	for _, tool := range []string{"kustomize", "helm"} {
		if err := t.copy("/usr/local/bin/"+tool, filepath.Join(bin, tool)); err != nil {
			return nil, fmt.Errorf("%s is needed for the manifest-generator image (make tools): %w", tool, err)
		}
	}
	return t, nil
}

// addLibraries adds to t the dynamic loader and the shared libraries of every dynamic executable
// of the given trees, at the paths the host's loader finds them (see sharedLibraries).
func addLibraries(t *tree, trees ...*tree) error {
	// The executables first: t may be one of the trees, and the libraries added to it are not.
	executables := map[string]string{} // image path -> host file
	for _, from := range trees {
		for p, e := range from.entries {
			if e.src != "" && e.mode&0o111 != 0 {
				executables[p] = e.src
			}
		}
	}
	for p, src := range executables {
		prog, ok, err := inspect(src)
		if err != nil {
			return err
		}
		if !ok || prog.interp == "" {
			continue
		}
		if !t.has(prog.interp) {
			if err := t.copy(prog.interp, prog.interp); err != nil {
				return fmt.Errorf("the loader of %s: %w", p, err)
			}
			t.entries[clean(prog.interp)].mode = 0o755
		}
		libs, err := sharedLibraries(src)
		if err != nil {
			return err
		}
		for _, lib := range libs {
			if !t.has(lib) {
				if err := t.copy(lib, lib); err != nil {
					return fmt.Errorf("a library of %s: %w", p, err)
				}
			}
		}
	}
	return nil
}
