package chart

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	helmarchive "helm.sh/helm/v4/pkg/chart/loader/archive"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// maxSubchartDepth bounds archives nested in archives (charts/a.tgz holding charts/b.tgz...):
// real charts nest two or three levels; the budget bounds the bytes, this the recursion.
const maxSubchartDepth = 16

// drivePath matches Windows drive paths, which path.IsAbs does not see ("c:/x"): Helm's loader
// refuses them too.
var drivePath = regexp.MustCompile(`^[a-zA-Z]:(/|$)`)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// packageTime is the modification time of every entry of a package this package writes:
// Helm stamps entries with time.Now, which would make every rebuild of the same chart a new
// digest. 0 is also what the artifact storage writes in its gzip headers.
var packageTime = time.Unix(0, 0)

// readArchive reads a gzipped tar chart archive into the files Helm's loader.LoadFiles takes,
// named relative to the chart directory exactly as Helm's loader.LoadArchiveFiles names them,
// but with this build's limits and stricter path checks: any ".." component, absolute or
// drive path is refused (Helm drops the first component of "../x" and loads it as "x"), and so
// are links and special files (Helm loads a symlink entry as an empty file; an extracted copy
// of the stored artifact would follow it).
func readArchive(data []byte, b *budget) ([]*helmarchive.BufferedFile, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errorf(ErrChartLoad, "not a gzipped chart archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var files []*helmarchive.BufferedFile
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errorf(ErrChartLoad, "corrupt chart archive: %v", err)
		}
		switch hd.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return nil, errorf(ErrChartLoad, "chart archive entry '%s' is a link (to '%s'); a chart archive may only hold regular files", hd.Name, hd.Linkname)
		default:
			return nil, errorf(ErrChartLoad, "chart archive entry '%s' is not a regular file (type %q)", hd.Name, hd.Typeflag)
		}
		name, err := archiveEntryName(hd.Name)
		if err != nil {
			return nil, err
		}
		if err := b.file(name, hd.Size); err != nil {
			return nil, as(ErrChartLoad, err)
		}
		buf := make([]byte, hd.Size)
		if _, err := io.ReadFull(tr, buf); err != nil {
			return nil, errorf(ErrChartLoad, "corrupt chart archive at entry '%s': %v", hd.Name, err)
		}
		files = append(files, &helmarchive.BufferedFile{Name: name, Data: bytes.TrimPrefix(buf, utf8BOM)})
	}
	if len(files) == 0 {
		return nil, errorf(ErrChartLoad, "chart archive holds no files")
	}
	return files, nil
}

// archiveEntryName is the name of an archive entry relative to the chart directory (the
// archive's top-level directory), computed as Helm's loader does once the entry is known to
// stay inside that directory.
func archiveEntryName(raw string) (string, error) {
	slashed := strings.ReplaceAll(raw, `\`, "/")
	for c := range strings.SplitSeq(slashed, "/") {
		if c == ".." {
			return "", errorf(ErrChartLoad, "chart archive entry '%s' escapes the chart", raw)
		}
	}
	if path.IsAbs(slashed) || drivePath.MatchString(slashed) {
		return "", errorf(ErrChartLoad, "chart archive entry '%s' escapes the chart (absolute path)", raw)
	}
	// Helm: an archive made on Windows uses \ as separator; the first component is the chart
	// directory, whatever its name.
	delim := "/"
	if strings.ContainsRune(raw, '\\') {
		delim = `\`
	}
	parts := strings.Split(raw, delim)
	name := path.Clean(strings.ReplaceAll(strings.Join(parts[1:], delim), delim, "/"))
	if name == "." || parts[0] == chartFile || path.IsAbs(name) || drivePath.MatchString(name) {
		return "", errorf(ErrChartLoad, "chart archive entry '%s' is not inside the chart's directory (a chart archive holds a single top-level directory)", raw)
	}
	return name, nil
}

// loadArchive loads a chart archive with the build's limits.
func loadArchive(data []byte, b *budget) (*helmchart.Chart, error) {
	return loadArchiveDepth(data, b, 0)
}

func loadArchiveDepth(data []byte, b *budget, depth int) (*helmchart.Chart, error) {
	files, err := readArchive(data, b)
	if err != nil {
		return nil, err
	}
	return loadFiles(files, b, depth)
}

// loadFiles is Helm's loader.LoadFiles, except that subcharts vendored as archives
// (charts/<name>.tgz) are read by readArchive, within the build's limits, instead of by Helm's
// LoadArchive with its global ones. Other entries of charts/ (unpacked subcharts, .prov files,
// names starting with "_" or ".") are left to LoadFiles, which handles them the same way.
func loadFiles(files []*helmarchive.BufferedFile, b *budget, depth int) (*helmchart.Chart, error) {
	var own, archives []*helmarchive.BufferedFile
	for _, f := range files {
		// Helm's LoadArchiveFiles refuses these (it takes them for parent references): a
		// package holding one could not be loaded by the artifact's consumers.
		if strings.HasPrefix(f.Name, "..") {
			return nil, errorf(ErrChartLoad, "chart file '%s': Helm refuses to load a chart holding a file whose name starts with '..'; rename it or list it in .helmignore", f.Name)
		}
		if isSubchartArchive(f.Name) {
			archives = append(archives, f)
			continue
		}
		own = append(own, f)
	}
	c, err := loader.LoadFiles(own)
	if err != nil {
		return nil, errorf(ErrChartLoad, "invalid chart: %v", err)
	}
	slices.SortFunc(archives, func(x, y *helmarchive.BufferedFile) int { return cmp.Compare(x.Name, y.Name) })
	for _, f := range archives {
		if depth >= maxSubchartDepth {
			return nil, errorf(ErrChartLoad, "chart '%s': subchart archives nested more than %d levels deep", c.Name(), maxSubchartDepth)
		}
		sc, err := loadArchiveDepth(f.Data, b, depth+1)
		if err != nil {
			return nil, as(ErrChartLoad, fmt.Errorf("subchart archive '%s' of chart '%s': %w", f.Name, c.Name(), err))
		}
		c.AddDependency(sc)
		// LoadFiles keeps every file in Raw, the subchart archives included.
		c.Raw = append(c.Raw, &common.File{Name: f.Name, Data: f.Data})
	}
	return c, nil
}

// isSubchartArchive tells the names LoadFiles would load with LoadArchive: charts/<n>.tgz,
// directly under charts/, n not starting with "_" or ".".
func isSubchartArchive(name string) bool {
	rest, ok := strings.CutPrefix(name, subchartDir+"/")
	return ok && !strings.Contains(rest, "/") && filepath.Ext(rest) == ".tgz" && strings.IndexAny(rest, "_.") != 0
}

// sortDependencies orders the subcharts by name, then version, at every level: LoadFiles
// collects them from a map, so their order (hence the order they are packaged in)
// would otherwise change from one build to the next.
func sortDependencies(c *helmchart.Chart) {
	deps := slices.Clone(c.Dependencies())
	slices.SortStableFunc(deps, func(x, y *helmchart.Chart) int {
		return cmp.Or(cmp.Compare(x.Name(), y.Name()), cmp.Compare(x.Metadata.Version, y.Metadata.Version))
	})
	c.SetDependencies(deps...)
	for _, d := range deps {
		sortDependencies(d)
	}
}

// writePackage packages c (what `helm package` does, made reproducible) into outDir as
// <name>-<version>.tgz, and refuses a package over MaxChartSize: the artifact would be refused
// by whoever loads it with the same limits.
func writePackage(c *helmchart.Chart, outDir string, lim Limits) (string, error) {
	sortDependencies(c)
	var buf bytes.Buffer
	if err := savePackage(c, &buf); err != nil {
		// Validation and serialisation errors (an invalid values.schema.json, which the loader
		// does not check) are the chart's.
		return "", errorf(ErrChartLoad, "packaging chart '%s': %v", c.Name(), err)
	}
	if int64(buf.Len()) > lim.MaxChartSize {
		return "", errorf(ErrTooLarge, "packaged chart '%s' is %d bytes, larger than --helm-chart-max-size (%d bytes)",
			c.Name(), buf.Len(), lim.MaxChartSize)
	}
	dest := filepath.Join(outDir, fmt.Sprintf("%s-%s.tgz", c.Name(), c.Metadata.Version))
	if err := writeFileAtomic(dest, buf.Bytes()); err != nil {
		return "", err
	}
	return dest, nil
}

// writeFileAtomic writes data to dest through a temporary file and a rename, so a failed
// build never leaves a partial archive where the caller looks for the result.
func writeFileAtomic(dest string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing '%s': %w", dest, err)
	}
	return nil
}
