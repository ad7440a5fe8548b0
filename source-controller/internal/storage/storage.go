package storage

import (
	"context"
	_ "crypto/sha256" // registers sha256 for go-digest
	_ "crypto/sha512" // registers sha384 and sha512 for go-digest
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options configure a Storage; each field mirrors a flag of the source-controller.
type Options struct {
	// BasePath is the directory holding the artifacts (--storage-path).
	BasePath string
	// AdvAddr is the host[:port] written into artifact URLs (--storage-adv-addr); empty means
	// "localhost".
	AdvAddr string
	// RetentionTTL is how long a superseded artifact is kept (--artifact-retention-ttl).
	RetentionTTL time.Duration
	// RetentionRecords is how many artifacts per object are kept, the current one included
	// (--artifact-retention-records).
	RetentionRecords int
	// DigestAlgorithm is sha256 (default when empty), sha384 or sha512 (--artifact-digest-algo).
	DigestAlgorithm digest.Algorithm
	// MaxSize bounds the size of an artifact in bytes; 0 means no limit (--artifact-max-size,
	// DefaultMaxSize).
	MaxSize int64
	// URLKeys sign artifact URLs and verify requests: the first signs, all verify, so keys can
	// be rotated (--artifact-url-keys-file, ReadURLKeys). None: New keeps a generated key in
	// GeneratedURLKeyFile, so a restart on the same volume keeps URLs valid.
	URLKeys [][]byte
	// OpenArtifacts writes unsigned URLs and serves every artifact to anyone who asks, as
	// Flux's source-controller does (--insecure-open-artifacts).
	OpenArtifacts bool
	// Remote, when set, is the store the replicas share (--storage-backend=s3): see Remote.
	Remote Remote
}

// Defaults of the flags that feed Options.
const (
	DefaultRetentionTTL     = time.Minute
	DefaultRetentionRecords = 2
	// DefaultMaxSize keeps one source from filling the shared storage, while leaving room for
	// far more than a repository of manifests: it is half the 512 MiB that consumers
	// (shared/artifact) download at most.
	DefaultMaxSize int64 = 256 << 20
)

// Storage stores artifacts under Options.BasePath. It is safe for concurrent use.
type Storage struct {
	Options
	etags *etagCache
	// keys sign URLs and verify requests; nil with OpenArtifacts.
	keys urlKeys
	// collected remembers, per object directory, the current artifact of the last collection in
	// the store and when it ran (see collectRemote).
	collected *collections
}

// New returns a Storage for opts, creating BasePath when missing.
func New(opts Options) (*Storage, error) {
	if opts.BasePath == "" {
		return nil, errors.New("storage path is required")
	}
	base, err := filepath.Abs(opts.BasePath)
	if err != nil {
		return nil, fmt.Errorf("storage path '%s': %w", opts.BasePath, err)
	}
	opts.BasePath = base
	if opts.AdvAddr == "" {
		opts.AdvAddr = "localhost"
	}
	if opts.DigestAlgorithm == "" {
		opts.DigestAlgorithm = digest.SHA256
	}
	switch opts.DigestAlgorithm {
	case digest.SHA256, digest.SHA384, digest.SHA512:
	default:
		return nil, fmt.Errorf("unsupported artifact digest algorithm '%s': must be one of sha256, sha384, sha512",
			opts.DigestAlgorithm)
	}
	if opts.RetentionTTL < 0 || opts.RetentionRecords < 0 || opts.MaxSize < 0 {
		return nil, errors.New("artifact retention TTL, retention records and max size must not be negative")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("creating storage path: %w", err)
	}
	s := &Storage{Options: opts, etags: newETagCache(), collected: &collections{m: map[string]collection{}}}
	switch {
	case opts.OpenArtifacts && len(opts.URLKeys) > 0:
		return nil, errors.New("open artifacts take no URL keys")
	case opts.OpenArtifacts:
	case len(opts.URLKeys) > 0:
		for i, k := range opts.URLKeys {
			if len(k) < MinURLKeySize {
				return nil, fmt.Errorf("artifact URL key %d is shorter than %d bytes", i+1, MinURLKeySize)
			}
		}
		s.keys = opts.URLKeys
	default:
		if s.keys, err = generatedURLKeys(base); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewArtifactFor returns the artifact of revision for obj, stored as
// <kind>/<namespace>/<name>/<fileName>. Digest, Size and LastUpdateTime are set when the
// file is written by Archive or Copy.
func (s *Storage) NewArtifactFor(kind string, obj metav1.Object, revision, fileName string) meta.Artifact {
	a := meta.Artifact{
		Path:     path.Join(strings.ToLower(kind), obj.GetNamespace(), obj.GetName(), fileName),
		Revision: revision,
	}
	s.SetArtifactURL(&a)
	return a
}

// SetArtifactURL recomputes the URL of a from its Path, as AdvAddr or the signing key may differ
// from the run that stored the artifact.
func (s *Storage) SetArtifactURL(a *meta.Artifact) {
	if a.Path == "" {
		return
	}
	a.URL = s.urlFor(a.Path)
}

// LinkURL is the URL of the link linkName next to the artifact (see Symlink).
func (s *Storage) LinkURL(a meta.Artifact, linkName string) string {
	return s.urlFor(path.Join(path.Dir(strings.TrimPrefix(path.Clean("/"+a.Path), "/")), linkName))
}

// urlFor is the URL of the file at p: signed (see signedurl.go) unless OpenArtifacts.
func (s *Storage) urlFor(p string) string {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	urlPath := "/" + rel
	if s.keys != nil {
		urlPath = s.keys.sign(rel)
	}
	u := url.URL{Scheme: "http", Host: s.AdvAddr, Path: urlPath}
	return u.String()
}

// LocalPath returns the absolute path of the artifact file; "" when a.Path is empty or names the
// storage root. Whatever a.Path holds (`..`, absolute), the result stays inside BasePath.
func (s *Storage) LocalPath(a meta.Artifact) string {
	p, err := s.localPath(a)
	if err != nil {
		return ""
	}
	return p
}

// localPath is LocalPath with the reason of a refusal; every method writing or deleting
// goes through it so that an empty or hostile path can never resolve to BasePath or above.
func (s *Storage) localPath(a meta.Artifact) (string, error) {
	rel, err := cleanRel(a.Path)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.BasePath, filepath.FromSlash(rel)), nil
}

// cleanRel clamps p under the root lexically, like a chroot would: `a/../../b` is `b`.
func cleanRel(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("invalid artifact path %q: contains NUL", p)
	}
	rel := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(p)), "/")
	if rel == "" {
		return "", fmt.Errorf("invalid artifact path %q", p)
	}
	return rel, nil
}

// objectDir returns the directory of the artifact file, refusing BasePath itself: garbage
// collection and RemoveAll work on that directory and must never touch other objects.
func (s *Storage) objectDir(a meta.Artifact) (string, error) {
	p, err := s.localPath(a)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(p)
	if dir == s.BasePath {
		return "", fmt.Errorf("artifact path '%s' is not inside an object directory", a.Path)
	}
	return dir, nil
}

// ArtifactExist reports whether the artifact file exists as a regular file.
func (s *Storage) ArtifactExist(a meta.Artifact) bool {
	p, err := s.localPath(a)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(p)
	if err == nil {
		return fi.Mode().IsRegular()
	}
	if s.Remote == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	rel, _ := cleanRel(a.Path)
	obj, err := s.Remote.Open(ctx, rel)
	if err != nil {
		return false
	}
	defer obj.Close()
	return obj.Info().Name == rel
}

// Symlink points linkName, in the directory of the artifact, at the artifact file and returns
// its URL: a stable address for the latest artifact. The link is relative, so it stays valid
// when the storage is mounted elsewhere and the server follows it, and is replaced atomically.
func (s *Storage) Symlink(a meta.Artifact, linkName string) (string, error) {
	if linkName == "" || linkName == "." || linkName == ".." || strings.ContainsAny(linkName, "/\\\x00") {
		return "", fmt.Errorf("invalid symlink name %q", linkName)
	}
	p, err := s.localPath(a)
	if err != nil {
		return "", err
	}
	if linkName == filepath.Base(p) {
		return "", fmt.Errorf("symlink name %q would replace the artifact", linkName)
	}
	dir := filepath.Dir(p)
	link := filepath.Join(dir, linkName)
	// A temporary name then rename(2): readers see the old or the new link, never none.
	tmp := filepath.Join(dir, fmt.Sprintf(".%s%s%016x", linkName, tmpInfix, rand.Uint64()))
	if err := os.Symlink(filepath.Base(p), tmp); err != nil {
		return "", fmt.Errorf("creating symlink: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("creating symlink: %w", err)
	}
	if s.Remote != nil {
		rel, _ := cleanRel(a.Path)
		ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
		defer cancel()
		if err := s.Remote.PutLink(ctx, path.Join(path.Dir(rel), linkName), path.Base(rel)); err != nil {
			return "", err
		}
	}
	return s.LinkURL(a, linkName), nil
}

// RemoveAll deletes the directory of the object owning the artifact and returns it, or "" when
// there was nothing to delete.
func (s *Storage) RemoveAll(a meta.Artifact) (string, error) {
	dir, err := s.objectDir(a)
	if err != nil {
		return "", err
	}
	if s.Remote != nil {
		rel, err := filepath.Rel(s.BasePath, dir)
		if err != nil {
			return "", err
		}
		if err := s.removeRemote(rel); err != nil {
			return "", err
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("removing artifacts: %w", err)
	}
	return dir, nil
}
