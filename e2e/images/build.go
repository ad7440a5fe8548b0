package images

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Controllers are the images Build makes, one per controller binary.
var Controllers = []string{"source-controller", "gating-controller", "resourceset-controller", "manifest-generator"}

// Flux are the images of Flux's controllers that the tests run beside Sluice's, built the same
// way from their static binaries in bin/ (`make tools`): not part of `make images`.
var Flux = []string{"kustomize-controller"}

// Repository and Tag name the images: a registry host no one serves, so that a cluster never
// tries to pull them; they exist only where they were imported.
const (
	Repository = "sluice.local"
	Tag        = "dev"
)

// Ref is the name of a controller's image, e.g. sluice.local/source-controller:dev.
func Ref(controller string) string { return Repository + "/" + controller + ":" + Tag }

// Archive is the file of a controller's image in the output directory.
func Archive(dir, controller string) string { return filepath.Join(dir, controller+".tar") }

// Options say where Build reads the binaries and writes the archives.
type Options struct {
	// Bin holds the controller binaries (static, as `make build` makes them) and, for the
	// manifest-generator, kustomize and helm (`make tools`).
	Bin string
	// Out receives <controller>.tar, a docker-archive tarball tagged Ref(controller) that
	// `docker load` and `ctr images import` read. An archive already there whose image is the
	// one Build would write is left as it is, and its compressed layers are reused.
	Out string
	// Controllers to build, of Controllers and Flux; all of Controllers when empty.
	Controllers []string
}

// Result describes one archive.
type Result struct {
	Controller, Ref, Path string
	Digest                v1.Hash // the image's manifest digest
	Written               bool    // false when the archive held the same image already
}

// Build writes an image archive per controller. Nothing is pulled: every image starts from an
// empty image and the layers of base, and the manifest-generator's also from the host's
// busybox, git (and their libraries), kustomize and helm.
func Build(opts Options) ([]Result, error) {
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = Controllers
	}
	for _, c := range controllers {
		if !slices.Contains(Controllers, c) && !slices.Contains(Flux, c) {
			return nil, fmt.Errorf("no image for %q: the images are %v and %v", c, Controllers, Flux)
		}
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	previous, err := readPrevious(opts.Out)
	if err != nil {
		return nil, err
	}
	baseTree, err := base()
	if err != nil {
		return nil, err
	}
	baseLayer, err := previous.layer(baseTree)
	if err != nil {
		return nil, err
	}

	var results []Result
	var pending []string // temporary archives, renamed once every archive is written
	defer func() {
		for _, p := range pending {
			os.Remove(p)
		}
	}()
	for _, c := range controllers {
		img, err := image(c, opts.Bin, baseLayer, previous)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		ref, err := name.NewTag(Ref(c))
		if err != nil {
			return nil, err
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		r := Result{Controller: c, Ref: Ref(c), Path: Archive(opts.Out, c), Digest: digest}
		if !holds(r.Path, ref, img) {
			tmp := r.Path + ".tmp"
			pending = append(pending, tmp)
			if err := tarball.WriteToFile(tmp, ref, img); err != nil {
				return nil, fmt.Errorf("%s: %w", c, err)
			}
			r.Written = true
		}
		results = append(results, r)
	}
	// The previous archives are read until every new one is written: only then are they replaced.
	for _, r := range results {
		if r.Written {
			if err := os.Rename(r.Path+".tmp", r.Path); err != nil {
				return nil, err
			}
		}
	}
	pending = nil
	return results, nil
}

// companions are binaries of `make build` that a controller's image carries beside it.
var companions = map[string][]string{"gating-controller": {"kubectl-gate"}}

// image assembles a controller's image: base, the manifest-generator's shell, git and tools, then
// the binary, with the configuration of the controller's Dockerfile.
func image(controller, bin string, baseLayer v1.Layer, previous *previousLayers) (v1.Image, error) {
	binary := filepath.Join(bin, controller)
	prog, ok, err := inspect(binary)
	if err != nil {
		return nil, fmt.Errorf("%w (make build)", err)
	}
	if !ok || prog.interp != "" {
		return nil, fmt.Errorf("%s is not a static executable: build it with make build (CGO_ENABLED=0)", binary)
	}
	binTree := newTree()
	if err := binTree.copy("/usr/local/bin/"+controller, binary); err != nil {
		return nil, err
	}
	// The gating-controller's image also serves the pages of `kubectl gate ui`
	// (deploy/components/dashboard), as its Dockerfile builds them.
	for _, extra := range companions[controller] {
		path := filepath.Join(bin, extra)
		if p, ok, err := inspect(path); err != nil || !ok || p.interp != "" || p.arch != prog.arch {
			return nil, fmt.Errorf("%s is not a static executable of %s (%v): build it with make build", path, prog.arch, err)
		}
		if err := binTree.copy("/usr/local/bin/"+extra, path); err != nil {
			return nil, err
		}
	}

	type layer struct {
		tree      *tree
		createdBy string
	}
	var layers []layer
	if controller == "manifest-generator" {
		system, err := shellAndGit()
		if err != nil {
			return nil, err
		}
		tools, err := generatorTools(bin)
		if err != nil {
			return nil, err
		}
		if err := addLibraries(system, system, tools); err != nil {
			return nil, err
		}
		if err := sameArch(prog.arch, system, tools); err != nil {
			return nil, err
		}
		layers = append(layers, layer{system, "shell (busybox) and git"}, layer{tools, "kustomize and helm"})
	}
	layers = append(layers, layer{binTree, "/usr/local/bin/" + controller})

	img, err := mutate.Append(empty.Image, addendum(baseLayer, "base: users, CA certificates, /tmp"))
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		built, err := previous.layer(l.tree)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, addendum(built, l.createdBy)); err != nil {
			return nil, err
		}
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", prog.arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{"/usr/local/bin/" + controller}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SSL_CERT_FILE=" + CABundle,
	}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title": controller,
		"org.opencontainers.image.url":   "https://github.com/sluice-gitops/sluice",
	}
	return mutate.ConfigFile(img, cfg)
}

// addendum is a layer with its history entry, which `docker history` shows.
func addendum(l v1.Layer, createdBy string) mutate.Addendum {
	return mutate.Addendum{Layer: l, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "sluice images: " + createdBy}}
}

// sameArch fails when an executable of the trees is built for another architecture than the
// controller binary: the image has one platform.
func sameArch(arch string, trees ...*tree) error {
	for _, t := range trees {
		for p, e := range t.entries {
			if e.src == "" || e.mode&0o111 == 0 {
				continue
			}
			prog, ok, err := inspect(e.src)
			if err != nil {
				return err
			}
			if ok && prog.arch != arch {
				return fmt.Errorf("%s (%s) is built for %s, the controller for %s", p, e.src, prog.arch, arch)
			}
		}
	}
	return nil
}
