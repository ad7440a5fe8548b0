package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	helmarchive "helm.sh/helm/v4/pkg/chart/loader/archive"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/ignore"
)

const (
	// maxSymlinkDepth bounds the symlinked directories followed within one another (Linux's
	// ELOOP limit is 40).
	maxSymlinkDepth = 40
	// maxWalkEntries bounds the directory entries one build visits: symlinked directories can
	// make a small tree look exponentially large without any file for the budget to count.
	maxWalkEntries = 100_000
)

// Package loads the chart at chartPath in sourceDir (an extracted GitRepository or Bucket
// artifact), checks that the dependencies of Chart.yaml are vendored in charts/ or are file://
// charts inside sourceDir (loaded and added, as `helm dependency build` would), merges the
// values files, applies the version metadata, and writes the package into outDir as
// <name>-<version>.tgz.
//
// Nothing outside sourceDir is read: chartPath, file:// dependencies and values files may not
// leave it, and symlinks are followed only while they stay inside it. The chart directory is
// read like Helm's loader.LoadDir reads it (.helmignore, the default ignore of templates/.*,
// UTF-8 BOMs trimmed). chartPath may also name a chart archive in the source, which is then
// stored as is when neither values files nor version metadata are set.
func Package(sourceDir, chartPath, outDir string, opts Options) (*Result, error) {
	lim := opts.Limits.withDefaults()
	rel, err := sourceRelPath(chartPath)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(sourceDir)
	if err != nil {
		return nil, fmt.Errorf("opening the source directory: %w", err)
	}
	defer root.Close()
	p := &packager{fsys: root.FS(), b: newBudget(lim)}

	// Symlinks in the chart path are resolved first, so that file:// dependencies and
	// symlinks inside the chart resolve from the chart's real directory, as on a disk.
	rel, err = evalSymlinks(p.fsys, rel)
	var info fs.FileInfo
	if err == nil {
		info, err = fs.Stat(p.fsys, rel)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errorf(ErrChartLoad, "no chart at '%s' in the source", chartPath)
	case err != nil:
		return nil, errorf(ErrChartLoad, "chart path '%s': %v", chartPath, err)
	}

	var (
		c       *helmchart.Chart
		archive []byte
	)
	if info.IsDir() {
		if c, err = p.loadDir(rel); err != nil {
			return nil, err
		}
		if err := p.resolveDependencies(c, rel, []string{rel}); err != nil {
			return nil, err
		}
	} else {
		if info.Size() > lim.MaxChartSize {
			return nil, as(ErrChartLoad, errorf(ErrTooLarge, "chart archive '%s' is %d bytes, larger than --helm-chart-max-size (%d bytes)", chartPath, info.Size(), lim.MaxChartSize))
		}
		if archive, err = readFileLimited(p.fsys, rel, lim.MaxChartSize, "--helm-chart-max-size"); err != nil {
			return nil, as(ErrChartLoad, err)
		}
		if c, err = loadArchive(archive, p.b); err != nil {
			return nil, as(ErrChartLoad, fmt.Errorf("chart archive '%s': %w", chartPath, err))
		}
	}
	res := &Result{Name: c.Name(), Version: c.Metadata.Version}

	valuesFiles := requestedValuesFiles(opts)
	if archive != nil && len(valuesFiles) == 0 && opts.VersionMetadata == "" {
		res.Path = filepath.Join(outDir, fmt.Sprintf("%s-%s.tgz", res.Name, res.Version))
		if err := writeFileAtomic(res.Path, archive); err != nil {
			return nil, err
		}
		return res, nil
	}

	merged, used, err := p.mergeSourceValues(c, rel, info.IsDir(), valuesFiles, opts.IgnoreMissingValuesFiles)
	if err != nil {
		return nil, err
	}
	return repackage(c, res, merged, used, opts, outDir, lim)
}

// sourceRelPath is chartPath as a slash path relative to the source root ("." for the root).
func sourceRelPath(chartPath string) (string, error) {
	if chartPath == "" {
		return "", errorf(ErrChartLoad, "chart path is empty")
	}
	slashed := filepath.ToSlash(chartPath)
	if path.IsAbs(slashed) || drivePath.MatchString(slashed) {
		return "", errorf(ErrChartLoad, "chart path '%s' must be relative to the root of the source", chartPath)
	}
	rel := path.Clean(slashed)
	if !fs.ValidPath(rel) {
		return "", errorf(ErrChartLoad, "chart path '%s' leaves the source directory", chartPath)
	}
	return rel, nil
}

// packager reads charts, their file:// dependencies and values files from the source through
// an os.Root, with one budget for the whole build.
type packager struct {
	fsys    fs.FS
	b       *budget
	entries int
}

// loadDir loads the chart directory dir (relative to the source root).
func (p *packager) loadDir(dir string) (*helmchart.Chart, error) {
	rules := ignore.Empty()
	data, err := readFileLimited(p.fsys, path.Join(dir, ignore.HelmIgnore), p.b.limits.MaxFileSize, "--helm-chart-file-max-size")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, as(ErrChartLoad, err)
	default:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, errorf(ErrChartLoad, "chart directory '%s': invalid %s: %v", dir, ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	w := &dirWalker{packager: p, rules: rules}
	if err := w.walk(dir, "", 0); err != nil {
		return nil, as(ErrChartLoad, fmt.Errorf("chart directory '%s': %w", dir, err))
	}
	c, err := loadFiles(w.files, p.b, 0)
	if err != nil {
		return nil, as(ErrChartLoad, fmt.Errorf("chart directory '%s': %w", dir, err))
	}
	return c, nil
}

// dirWalker collects the files of one chart directory, as Helm's LoadDir does, in lexical order.
type dirWalker struct {
	*packager
	rules *ignore.Rules
	files []*helmarchive.BufferedFile
}

// walk reads the directory at fsPath (relative to the source root), whose files are named
// prefix/<name> in the chart; links counts the symlinked directories followed to get there.
func (w *dirWalker) walk(fsPath, prefix string, links int) error {
	entries, err := fs.ReadDir(w.fsys, fsPath)
	if err != nil {
		return errorf(ErrChartLoad, "reading '%s': %v", fsPath, err)
	}
	for _, e := range entries {
		if w.entries++; w.entries > maxWalkEntries {
			return errorf(ErrChartLoad, "more than %d files and directories (symlinked directories included)", maxWalkEntries)
		}
		p := path.Join(fsPath, e.Name())
		name := e.Name()
		if prefix != "" {
			name = prefix + "/" + name
		}
		info, err := e.Info()
		if err != nil {
			return errorf(ErrChartLoad, "reading '%s': %v", name, err)
		}
		followed := false
		if info.Mode()&fs.ModeSymlink != 0 {
			if w.rules.Ignore(name, info) {
				continue
			}
			// Like Helm's LoadDir, the target's content is loaded under the link's name; unlike
			// it, only targets inside the source.
			target, err := evalSymlinks(w.fsys, p)
			if err == nil {
				info, err = fs.Stat(w.fsys, target)
			}
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return errorf(ErrChartLoad, "'%s' is a dangling symlink; remove it or list it in %s", name, ignore.HelmIgnore)
			case err != nil:
				return errorf(ErrChartLoad, "'%s': %v", name, err)
			}
			p, followed = target, true
		}
		if info.IsDir() {
			if w.rules.Ignore(name, info) {
				continue
			}
			depth := links
			if followed {
				if p == "." || p == fsPath || strings.HasPrefix(fsPath+"/", p+"/") {
					return errorf(ErrChartLoad, "'%s' is a symlink to '%s', a directory it is in: a symlink loop", name, p)
				}
				if depth++; depth > maxSymlinkDepth {
					return errorf(ErrChartLoad, "'%s': more than %d symlinked directories within one another (a symlink loop?)", name, maxSymlinkDepth)
				}
			}
			if err := w.walk(p, name, depth); err != nil {
				return err
			}
			continue
		}
		if w.rules.Ignore(name, info) {
			continue
		}
		if !info.Mode().IsRegular() {
			return errorf(ErrChartLoad, "cannot load '%s': not a regular file (mode %s)", name, info.Mode())
		}
		if err := w.b.file(name, info.Size()); err != nil {
			return err
		}
		data, err := readFileLimited(w.fsys, p, w.b.limits.MaxFileSize, "--helm-chart-file-max-size")
		if err != nil {
			return err
		}
		w.files = append(w.files, &helmarchive.BufferedFile{Name: name, Data: bytes.TrimPrefix(data, utf8BOM)})
	}
	return nil
}

// readFileLimited reads a file of the source, refusing one over limit bytes (named by flag in
// the message) even if it grew since it was stat'ed.
func readFileLimited(fsys fs.FS, name string, limit int64, flag string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errorf(ErrTooLarge, "'%s' is larger than %s (%d bytes)", name, flag, limit)
	}
	return data, nil
}

// resolveDependencies checks that every dependency of c's Chart.yaml is among its subcharts,
// matched by chart name as `helm install` matches them (action.CheckDependencies), and loads
// the missing file:// ones from the source, relative to dir, the chart's directory. It recurses
// into the file:// charts it loads, whose own dependencies must be satisfied too; stack is the
// chain of file:// directories, to report cycles.
func (p *packager) resolveDependencies(c *helmchart.Chart, dir string, stack []string) error {
	var notVendored []string
	for _, d := range c.Metadata.Dependencies {
		if hasSubchart(c, d.Name) {
			continue
		}
		if !strings.HasPrefix(d.Repository, "file://") {
			repo := d.Repository
			if repo == "" {
				repo = "no repository"
			}
			notVendored = append(notVendored, fmt.Sprintf("dependency '%s' (%s) is not vendored in charts/", d.Name, repo))
			continue
		}
		dep, err := p.loadLocalDependency(c, dir, d, stack)
		if err != nil {
			return err
		}
		c.AddDependency(dep)
	}
	if len(notVendored) > 0 {
		return errorf(ErrDependency, "chart '%s': %s; run `helm dependency build` in '%s' and commit its charts/ directory, or refer to a chart in the source with file://",
			c.Name(), strings.Join(notVendored, "; "), dir)
	}
	return nil
}

func hasSubchart(c *helmchart.Chart, name string) bool {
	return slices.ContainsFunc(c.Dependencies(), func(sc *helmchart.Chart) bool { return sc.Name() == name })
}

// loadLocalDependency loads the chart directory of a file:// dependency, relative to the
// dependent chart's directory as Helm resolves it, and checks it is the chart and version asked.
func (p *packager) loadLocalDependency(c *helmchart.Chart, dir string, d *helmchart.Dependency, stack []string) (*helmchart.Chart, error) {
	rel := filepath.ToSlash(strings.TrimPrefix(d.Repository, "file://"))
	if rel == "" || path.IsAbs(rel) || drivePath.MatchString(rel) {
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s) must be a path relative to the chart directory", c.Name(), d.Name, d.Repository)
	}
	depDir := path.Join(dir, rel)
	if !fs.ValidPath(depDir) {
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s) leaves the source directory", c.Name(), d.Name, d.Repository)
	}
	realDir, err := evalSymlinks(p.fsys, depDir)
	var info fs.FileInfo
	if err == nil {
		depDir = realDir
		info, err = fs.Stat(p.fsys, depDir)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s): no directory '%s' in the source", c.Name(), d.Name, d.Repository, depDir)
	case err != nil:
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s): %v", c.Name(), d.Name, d.Repository, err)
	case !info.IsDir():
		// `helm dependency build` packages file:// directories only.
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s): '%s' is not a chart directory", c.Name(), d.Name, d.Repository, depDir)
	}
	if slices.Contains(stack, depDir) {
		return nil, errorf(ErrDependency, "chart '%s': file:// dependencies form a cycle: %s -> %s", c.Name(), strings.Join(stack, " -> "), depDir)
	}
	dep, err := p.loadDir(depDir)
	if err != nil {
		return nil, as(ErrDependency, fmt.Errorf("chart '%s': dependency '%s' (%s): %w", c.Name(), d.Name, d.Repository, err))
	}
	if dep.Name() != d.Name {
		return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s) is chart '%s'; the name in Chart.yaml must match", c.Name(), d.Name, d.Repository, dep.Name())
	}
	if d.Version != "" {
		constraint, err := semver.NewConstraint(d.Version)
		if err != nil {
			return nil, errorf(ErrDependency, "chart '%s': dependency '%s': invalid version constraint '%s': %v", c.Name(), d.Name, d.Version, err)
		}
		v, err := semver.NewVersion(dep.Metadata.Version)
		if err != nil || !constraint.Check(v) {
			return nil, errorf(ErrDependency, "chart '%s': dependency '%s' (%s) is version '%s', which does not satisfy '%s'", c.Name(), d.Name, d.Repository, dep.Metadata.Version, d.Version)
		}
	}
	if err := p.resolveDependencies(dep, depDir, append(slices.Clone(stack), depDir)); err != nil {
		return nil, err
	}
	return dep, nil
}

// mergeSourceValues merges the values files for Package. Each path is looked for relative to
// the source root first, as Flux does, then relative to the chart directory (or, for an
// archive in the source, inside the chart); none merged keeps the chart's values.yaml.
func (p *packager) mergeSourceValues(c *helmchart.Chart, chartPath string, isDir bool, files []string, ignoreMissing bool) (map[string]any, []string, error) {
	merged := map[string]any{}
	var used []string
	for _, f := range files {
		name := path.Clean(filepath.ToSlash(f))
		if !fs.ValidPath(name) {
			return nil, nil, errorf(ErrValuesFile, "values file '%s' must be a relative path inside the source", f)
		}
		candidates := []string{name}
		if isDir && chartPath != "." {
			candidates = append(candidates, path.Join(chartPath, name))
		}
		var data []byte
		found := false
		for _, cand := range candidates {
			cand, err := evalSymlinks(p.fsys, cand)
			var info fs.FileInfo
			if err == nil {
				info, err = fs.Stat(p.fsys, cand)
			}
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case err != nil:
				return nil, nil, errorf(ErrValuesFile, "values file '%s': %v", f, err)
			case info.IsDir():
				return nil, nil, errorf(ErrValuesFile, "values file '%s' is a directory ('%s')", f, cand)
			}
			if data, err = readFileLimited(p.fsys, cand, p.b.limits.MaxFileSize, "--helm-chart-file-max-size"); err != nil {
				return nil, nil, as(ErrValuesFile, err)
			}
			found = true
			break
		}
		if !found && !isDir {
			for _, rf := range c.Raw {
				if rf.Name == name {
					data, found = rf.Data, true
					break
				}
			}
		}
		if !found {
			if ignoreMissing {
				continue
			}
			where := fmt.Sprintf("in the source ('%s')", name)
			if len(candidates) > 1 {
				where = fmt.Sprintf("in the source ('%s') nor in chart '%s' ('%s')", name, c.Name(), candidates[1])
			} else if !isDir {
				where = fmt.Sprintf("in the source ('%s') nor in chart '%s'", name, c.Name())
			}
			return nil, nil, errorf(ErrValuesFile, "values file '%s' not found %s", f, where)
		}
		values, err := parseValues(f, data)
		if err != nil {
			return nil, nil, err
		}
		merged = mergeValues(merged, values)
		used = append(used, f)
	}
	return merged, used, nil
}

// maxSymlinks bounds the symlinks resolved for one path, like the kernel's ELOOP limit.
const maxSymlinks = 255

// evalSymlinks resolves the symlinks in the slash path p relative to the source root, as
// filepath.EvalSymlinks would with the source as the file system's root, except that a link
// with an absolute target, or leading above the root, is refused: the source is an extracted
// artifact, whose links can only mean something relative to it. The os.Root behind fsys would
// refuse such a path anyway; resolving first gives the real directory of a file (so that a
// relative link or file:// path resolves from it) and a clear message.
func evalSymlinks(fsys fs.FS, p string) (string, error) {
	var resolved []string
	todo := strings.Split(p, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return "", fmt.Errorf("'%s' leads outside the source", p)
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		next := path.Join(append(slices.Clone(resolved), c)...)
		info, err := fs.Lstat(fsys, next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			return "", fmt.Errorf("'%s': %w", next, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = append(resolved, c)
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("'%s': too many levels of symbolic links", p)
		}
		dest, err := fs.ReadLink(fsys, next)
		if err != nil {
			return "", fmt.Errorf("'%s': %w", next, err)
		}
		dest = filepath.ToSlash(dest)
		if path.IsAbs(dest) || drivePath.MatchString(dest) {
			return "", fmt.Errorf("'%s' is a symlink to the absolute path '%s'; symlinks must be relative and stay inside the source", next, dest)
		}
		if t := path.Join(path.Join(resolved...), dest); t == ".." || strings.HasPrefix(t, "../") {
			return "", fmt.Errorf("'%s' is a symlink to '%s', outside the source", next, dest)
		}
		todo = append(strings.Split(dest, "/"), todo...)
	}
	if len(resolved) == 0 {
		return ".", nil
	}
	return path.Join(resolved...), nil
}
