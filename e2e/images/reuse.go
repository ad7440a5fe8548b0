package images

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// previousLayers are the layers of the archives a previous Build left in the output directory,
// by their uncompressed digest (DiffID). A layer whose content has not changed (the base, the
// shell and git, kustomize and helm, a binary that was not rebuilt) is taken from there,
// compressed, instead of compressed again: gzip is most of the time of a build.
type previousLayers struct {
	byDiffID map[v1.Hash]v1.Layer
}

func readPrevious(dir string) (*previousLayers, error) {
	p := &previousLayers{byDiffID: map[v1.Hash]v1.Layer{}}
	archives, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, err
	}
	for _, archive := range archives {
		// An archive that is not one of ours, or damaged, is only not reused.
		img, err := tarball.ImageFromPath(archive, nil)
		if err != nil {
			continue
		}
		cfg, err1 := img.ConfigFile()
		m, err2 := img.Manifest()
		layers, err3 := img.Layers()
		if errors.Join(err1, err2, err3) != nil || len(layers) != len(m.Layers) || len(layers) != len(cfg.RootFS.DiffIDs) {
			continue
		}
		for i, l := range layers {
			id := cfg.RootFS.DiffIDs[i]
			p.byDiffID[id] = knownLayer{Layer: l, diffID: id, digest: m.Layers[i].Digest, size: m.Layers[i].Size}
		}
	}
	return p, nil
}

// knownLayer is a layer of a previous archive with the digests its manifest and configuration
// record: go-containerregistry would otherwise compute them again, decompressing the layer.
type knownLayer struct {
	v1.Layer
	diffID, digest v1.Hash
	size           int64
}

func (l knownLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }
func (l knownLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l knownLayer) Size() (int64, error)     { return l.size, nil }

// layer is t as a layer: the previous archives' copy when one has the same content, else t
// compressed (once; kept in memory until the archive is written).
func (p *previousLayers) layer(t *tree) (v1.Layer, error) {
	h := sha256.New()
	if err := t.write(h); err != nil {
		return nil, err
	}
	id := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	if old, ok := p.byDiffID[id]; ok {
		return old, nil
	}
	l, err := t.layer()
	if err != nil {
		return nil, err
	}
	p.byDiffID[id] = l
	return l, nil
}

// holds reports whether the archive at path already holds img under ref: the same
// configuration, which names the content of every layer.
func holds(path string, ref name.Tag, img v1.Image) bool {
	old, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		return false
	}
	want, err1 := img.ConfigName()
	got, err2 := old.ConfigName()
	return errors.Join(err1, err2) == nil && want == got
}
