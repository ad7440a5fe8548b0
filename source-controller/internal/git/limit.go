package git

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"

	"github.com/sluice-gitops/sluice/source-controller/internal/sizelimit"
)

// DefaultMaxCloneSize is the default of --git-max-clone-size: four times the default
// --artifact-max-size, room for the objects of a shallow clone and the files of its tree, which
// compress into an artifact, or of which spec.ignore keeps a part.
const DefaultMaxCloneSize int64 = 1 << 30

// ErrCloneTooLarge is wrapped by the error of Checkout for a clone over its limit. It is also
// what a write past the budget returns; go-git may wrap or drop that error, so Checkout asks the
// budget rather than the error.
var ErrCloneTooLarge = errors.New("Git clone is over --git-max-clone-size")

// budget counts the bytes a clone writes, its pack and the pack's index, and refuses the write
// that would go over limit (0: none), so that a huge repository stops before it fills the disk
// or the memory.
type budget struct {
	limit    int64
	written  atomic.Int64
	exceeded atomic.Bool
}

// tooLarge is the error of a clone of size bytes over limit (the whole size unknown when
// partial).
func tooLarge(size, limit int64, partial bool) error {
	return &sizelimit.Error{What: "Git clone", Size: size, Partial: partial, Flag: "--git-max-clone-size", Limit: limit, Err: ErrCloneTooLarge}
}

func (b *budget) take(n int) error {
	if b.limit <= 0 {
		return nil
	}
	if b.written.Add(int64(n)) > b.limit {
		b.exceeded.Store(true)
		return ErrCloneTooLarge
	}
	return nil
}

// budgetFS is a go-billy filesystem whose file writes are charged to a budget. go-git writes
// the pack, its index and the references through Create, OpenFile and TempFile, in this
// filesystem or one of its Chroots.
type budgetFS struct {
	billy.Filesystem
	budget *budget
}

func (fs budgetFS) Create(name string) (billy.File, error) {
	return fs.charged(fs.Filesystem.Create(name))
}

func (fs budgetFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return fs.charged(fs.Filesystem.OpenFile(name, flag, perm))
}

func (fs budgetFS) TempFile(dir, prefix string) (billy.File, error) {
	return fs.charged(fs.Filesystem.TempFile(dir, prefix))
}

func (fs budgetFS) Chroot(path string) (billy.Filesystem, error) {
	c, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return budgetFS{Filesystem: c, budget: fs.budget}, nil
}

// Capabilities and Chmod are those of the wrapped filesystem, which go-git looks up by type
// assertion.
func (fs budgetFS) Capabilities() billy.Capability { return billy.Capabilities(fs.Filesystem) }

func (fs budgetFS) Chmod(name string, mode os.FileMode) error {
	if c, ok := fs.Filesystem.(billy.Chmod); ok {
		return c.Chmod(name, mode)
	}
	return errors.ErrUnsupported
}

func (fs budgetFS) charged(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return budgetFile{File: f, budget: fs.budget}, nil
}

type budgetFile struct {
	billy.File
	budget *budget
}

func (f budgetFile) Write(p []byte) (int, error) {
	if err := f.budget.take(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
