package imagescan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Options say how to reach a repository: credentials and transport. They
// belong to the caller (a workload's imagePullSecrets, a CA bundle), while
// the caches belong to the Scanner.
type Options struct {
	// Keychain finds the credentials for the repository (shared/secrets'
	// Registries reads imagePullSecrets into one); Auth gives them directly. At most
	// one of them; neither means anonymous.
	Keychain authn.Keychain
	Auth     authn.Authenticator
	// Insecure speaks plain HTTP to the registry (name.Insecure).
	Insecure bool
	// Transport carries the requests, e.g. one trusting a private CA: an
	// *http.Transport, whose copy with the Scanner's address policy as its
	// dialer is used (any other RoundTripper is refused: its connections
	// could not be checked). Reuse one Transport per CA: connections and
	// registry sessions are kept per Transport. The caches are not: a tag
	// list is the same whichever trusted connection brought it.
	Transport http.RoundTripper
	// NotBefore, when set, makes the caches filled before it count as stale: the tag list and
	// the tags' digests are read again (a registry webhook said the repository changed).
	NotBefore time.Time
	// FreshDigests checks a tag's digest once per Interval, as its tag list is, instead of once
	// per DigestRefresh: for a pinned digest, or a verified one, a re-pushed tag must be seen.
	FreshDigests bool
}

// retryStatusCodes are the answers go-containerregistry retries by itself
// (its defaults less 429, which rateLimitTransport retries honouring
// Retry-After).
var retryStatusCodes = []int{
	http.StatusRequestTimeout,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// maxPullers bounds the registry sessions kept; past it they are all
// dropped, which costs each repository a new ping.
const maxPullers = 1024

// pullerKey identifies a go-containerregistry Puller: one per set of
// credentials and transport, so that a repository is pinged and
// authenticated once rather than on every request.
type pullerKey struct {
	credentials string
	insecure    bool
	transport   *http.Transport
}

type pullerEntry struct{ puller *remote.Puller }

// client is what one operation on a repository needs.
type client struct {
	repo        name.Repository
	credentials string // digest of the credentials, to key the caches
	// notBefore and freshDigests are the Options'.
	notBefore    time.Time
	freshDigests bool
	puller       *remote.Puller
	// remote reaches the repository as the puller does: credentials, address policy, 429s.
	remote []remote.Option
	drop   func() // forgets the puller after an error
}

// client resolves opts for repo. The caches are keyed by the credentials
// themselves (a digest of them), not by the Keychain that found them: the
// same pull secret read again by another reconcile shares the cache, while
// a caller with other or no credentials never reads what only
// credentials-holders were shown.
func (s *Scanner) client(ctx context.Context, repo name.Repository, opts Options) (*client, error) {
	if opts.Keychain != nil && opts.Auth != nil {
		return nil, errors.New("imagescan: Options has both Keychain and Auth")
	}
	if opts.Insecure {
		r, err := name.NewRepository(repo.Name(), name.Insecure)
		if err != nil {
			return nil, err
		}
		repo = r
	}
	auth := opts.Auth
	if opts.Keychain != nil {
		var err error
		if auth, err = authn.Resolve(ctx, opts.Keychain, repo); err != nil {
			return nil, fmt.Errorf("credentials for %s: %w", repo, err)
		}
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	cfg, err := authn.Authorization(ctx, auth)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", repo, err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	credentials := hex.EncodeToString(sum[:])

	base, err := s.transport(opts.Transport)
	if err != nil {
		return nil, err
	}
	ropts := []remote.Option{
		remote.WithAuth(auth),
		remote.WithTransport(&rateLimitTransport{next: &countingTransport{next: base, stats: &s.stats}, s: s}),
		remote.WithRetryStatusCodes(retryStatusCodes...),
	}
	newPuller := func() (*remote.Puller, error) { return remote.NewPuller(ropts...) }
	c := &client{repo: repo, credentials: credentials, notBefore: opts.NotBefore, freshDigests: opts.FreshDigests,
		remote: ropts, drop: func() {}}
	key := pullerKey{credentials: credentials, insecure: opts.Insecure, transport: base}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.pullers[key]
	if !ok {
		p, err := newPuller()
		if err != nil {
			return nil, err
		}
		if len(s.pullers) >= maxPullers {
			clear(s.pullers)
		}
		e = &pullerEntry{puller: p}
		s.pullers[key] = e
	}
	c.puller = e.puller
	// A Puller keeps the first error of a repository's session forever
	// (a failed ping, a refused token): start afresh after any error.
	c.drop = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.pullers[key] == e {
			delete(s.pullers, key)
		}
	}
	return c, nil
}

// RemoteOptions reach repo as the Scanner does (the credentials of opts, the address policy,
// the handling of 429s), for the reads it does not make itself: the signatures of an image.
func (s *Scanner) RemoteOptions(ctx context.Context, repo name.Repository, opts Options) ([]remote.Option, error) {
	c, err := s.client(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	return c.remote, nil
}
