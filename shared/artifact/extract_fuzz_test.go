package artifact

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// FuzzExtractTar extracts archives described by a small script, one entry per line:
// "f name body", "d name", "s name target" (symlink), "h name target" (hard link), "p name"
// (FIFO). A script says more to the fuzzer than raw tar bytes would, whose header checksums
// its mutations almost never keep valid. Whether the extraction succeeds or not, nothing may
// be created next to the target, the planted file beside it must be neither changed nor
// linked to, and after a success no path in the target may resolve outside it.
func FuzzExtractTar(f *testing.F) {
	for _, seed := range []string{
		"f a.yaml apiVersion: v1\nd dir/\nf dir/b.yaml kind: ConfigMap",
		"f ../x evil",
		"f a/../../x evil",
		"f ../outside evil",
		"f /etc/x evil",
		"d ../d/",
		"s root /",
		"s up ../..",
		"d sub/\ns sub/up ../../outside",
		"h h ../outside",
		"s a .\ns b a/..",
		"s a .\ns b a/../outside",
		"s a .\ns b a/../later",
		"s a .\ns d a/..\nf d/evil evil",
		"s a .\ns d a/..\nd d/evil/",
		"s a .\ns e a/../evil\nf e evil",
		"s a .\ns e a/../outside\nf e evil",
		"s a .\ns d a/..\nh h d/outside",
		"d d1/d2/\nf d1/x x\ns d1/d2/s ../x\nh top d1/d2/s",
		"s dangling missing/file",
		"s l1 l2\ns l2 l1",
		"f dir/file hello\ns d1/d2/a ../..\ns b d1/d2/a/dir/file",
		"f dir/file hello\ns s dir/file\nh h s",
		"p fifo",
		"f a x\nf a y\nd a/",
		"s a b\ns b c\ns c ../x",
		"f ./a/./b x\nh c a//b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) > 2048 {
			return
		}
		entries := parseScript(script)
		if len(entries) == 0 || len(entries) > 32 {
			return
		}
		data, ok := buildTar(entries)
		if !ok {
			return // archive/tar refuses to write the header (a name it cannot encode)
		}
		parent, target := newTarget(t)
		outside := filepath.Join(parent, "outside")
		if err := os.WriteFile(outside, []byte("planted"), 0o644); err != nil {
			t.Fatal(err)
		}

		err := ExtractTar(bytes.NewReader(data), target, Limits{MaxSize: 1 << 16, MaxFiles: 64})

		if names := namesIn(t, parent); len(names) != 2 {
			t.Fatalf("extraction created %v next to the target (err: %v)", names, err)
		}
		if b, rerr := os.ReadFile(outside); rerr != nil || string(b) != "planted" {
			t.Fatalf("the planted file was changed: %q, %v (err: %v)", b, rerr, err)
		}
		fi, serr := os.Stat(outside)
		if serr != nil {
			t.Fatal(serr)
		}
		if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
			t.Fatalf("the planted file has %d links (err: %v)", n, err)
		}
		if err != nil {
			return
		}
		checkInside(t, target, outside)
	})
}

// checkInside walks the extracted tree and resolves every entry through an os.Root, which
// refuses any path whose resolution steps above the root (even to come back): an independent
// check of the extractor's own link resolution.
func checkInside(t *testing.T, target, outside string) {
	root, err := os.OpenRoot(target)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	planted, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(target, p)
		if err != nil {
			return err
		}
		fi, err := root.Stat(rel)
		switch {
		case err != nil && strings.Contains(err.Error(), "path escapes from parent"):
			t.Errorf("%s resolves outside the target", rel)
		case err == nil && os.SameFile(fi, planted):
			t.Errorf("%s is the planted file", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// parseScript reads the entry script of FuzzExtractTar; unknown lines are skipped.
func parseScript(script string) []entry {
	var out []entry
	for line := range strings.SplitSeq(script, "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		name, arg, _ := strings.Cut(rest, " ")
		if name == "" {
			continue
		}
		switch kind {
		case "f":
			out = append(out, file(name, arg))
		case "d":
			out = append(out, dir(name))
		case "s":
			out = append(out, symlink(name, arg))
		case "h":
			out = append(out, hardlink(name, arg))
		case "p":
			out = append(out, entry{name: name, typ: tar.TypeFifo})
		}
	}
	return out
}

// buildTar is buildTarGz's tarball, uncompressed, reporting the names archive/tar cannot write
// instead of failing.
func buildTar(entries []entry) ([]byte, bool) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.linkname, Mode: 0o644, Format: tar.FormatPAX}
		if e.mode != 0 {
			hdr.Mode = e.mode
		}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, false
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			return nil, false
		}
	}
	if err := tw.Close(); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
