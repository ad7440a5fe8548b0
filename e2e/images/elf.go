package images

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// program is what an image needs to know of a host executable: the platform it was built for and
// the dynamic loader it asks for (none for a static binary).
type program struct {
	arch   string
	interp string
}

// archs maps ELF machines to OCI architectures.
var archs = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_386:     "386",
	elf.EM_ARM:     "arm",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
	elf.EM_RISCV:   "riscv64",
}

// inspect reads the ELF header of a host executable (debug/elf); ok is false when the file is
// not ELF (a shell script).
func inspect(file string) (p program, ok bool, err error) {
	f, err := elf.Open(file)
	if err != nil {
		var format *elf.FormatError
		if errors.As(err, &format) {
			return program{}, false, nil
		}
		return program{}, false, err
	}
	defer f.Close()
	arch, known := archs[f.Machine]
	if !known {
		return program{}, false, fmt.Errorf("%s: unknown ELF machine %s", file, f.Machine)
	}
	p.arch = arch
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return program{}, false, fmt.Errorf("%s: PT_INTERP: %w", file, err)
			}
			p.interp = string(bytes.TrimRight(b, "\x00"))
		}
	}
	return p, true, nil
}

// sharedLibraries lists the libraries a dynamic host executable loads, by the path the host's
// loader resolves each to (`ldd`, which follows the loader's own search: ld.so.cache, RUNPATH,
// the system directories). The image keeps each at that path, where its loader, which has no
// cache, finds it in the same system directories.
func sharedLibraries(file string) ([]string, error) {
	out, err := exec.Command("ldd", file).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", file, err)
	}
	var libs []string
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		name, resolved, arrow := strings.Cut(line, "=>")
		if !arrow {
			continue // linux-vdso (in the kernel) and the loader (the ELF's PT_INTERP)
		}
		resolved = strings.TrimSpace(resolved)
		if strings.HasPrefix(resolved, "not found") {
			return nil, fmt.Errorf("ldd %s: %s not found", file, strings.TrimSpace(name))
		}
		if p, _, ok := strings.Cut(resolved, " ("); ok && strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	return libs, s.Err()
}
