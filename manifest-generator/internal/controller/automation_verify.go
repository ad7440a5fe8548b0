package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/sluice-gitops/sluice/shared/cosign"
	"github.com/sluice-gitops/sluice/shared/secrets"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/imagescan"
)

// verifyKeys are the cosign public keys (or keyless trust root) of spec.automation.verify, read
// once per scan.
type verifyKeys struct {
	verifier cosign.Verifier
	// id names the key set in the verdict cache: a digest of the Secret's keys.
	id [sha256.Size]byte
	// err is why there are no keys: every verification fails with it.
	err error
}

// notVerifiedError is a tag whose image no key verifies: the tag is refused, the scan goes on.
type notVerifiedError struct{ reason string }

func (e *notVerifiedError) Error() string { return e.reason }

// readVerifyKeys reads the keys of spec.automation.verify; nil without it.
func (r *ManifestGenerationReconciler) readVerifyKeys(ctx context.Context, obj *generatorv1.ManifestGeneration) *verifyKeys {
	v := obj.Spec.Automation.Verify
	if v == nil {
		return nil
	}
	k := &verifyKeys{}
	data, err := secrets.Data(ctx, r.Client, obj.Namespace, v.SecretRef.Name)
	if err == nil {
		k.verifier, err = newVerifier(data, v.MatchOIDCIdentity)
	}
	if err != nil {
		k.err = fmt.Errorf("spec.automation.verify: secret '%s/%s': %w", obj.Namespace, v.SecretRef.Name, err)
		return k
	}
	h := sha256.New()
	for _, id := range v.MatchOIDCIdentity {
		fmt.Fprintf(h, "identity:%d:%s%d:%s", len(id.Issuer), id.Issuer, len(id.Subject), id.Subject)
	}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(data[name]))
		h.Write(data[name])
	}
	copy(k.id[:], h.Sum(nil))
	return k
}

// newVerifier is a key verifier, or a keyless one with identities.
func newVerifier(data map[string][]byte, identities []generatorv1.OIDCIdentityMatch) (cosign.Verifier, error) {
	if len(identities) == 0 {
		return cosign.NewKeyVerifier(data)
	}
	ids := make([]cosign.Identity, len(identities))
	for i, id := range identities {
		ids[i] = cosign.Identity{Issuer: id.Issuer, Subject: id.Subject}
	}
	return cosign.NewKeylessVerifier(data, ids)
}

// verify checks the cosign signature of ref (a digest) with the keys; a verdict, either way, is
// kept for the digest, its signatures and the key set: together they name what was checked.
func (k *verifyKeys) verify(ctx context.Context, r *ManifestGenerationReconciler, ref name.Digest, opts imagescan.Options) error {
	if k == nil {
		return errors.New("a workload's fluxcd.io/verify policy needs spec.automation.verify.secretRef: the Secret of the cosign public keys")
	}
	if k.err != nil {
		return k.err
	}
	ropts, err := r.Scanner.RemoteOptions(ctx, ref.Context(), opts)
	if err != nil {
		return err
	}
	// Signatures are often attached after the push: the verdict holds for the signatures there
	// were, so the signature image's digest is part of its key (one HEAD per scan).
	sigs, err := signaturesDigest(ctx, ref, ropts)
	if err != nil {
		return err
	}
	key := verdictKey{keys: k.id, digest: ref.String(), signatures: sigs}
	if v, ok := r.verdicts.get(key); ok {
		return v
	}
	_, err = k.verifier.Verify(ctx, ref, ropts...)
	if errors.Is(err, cosign.ErrNotVerified) {
		verdict := &notVerifiedError{reason: err.Error()}
		r.verdicts.put(key, verdict)
		return verdict
	}
	if err != nil {
		return err // the registry, not the signature: asked again next scan
	}
	r.verdicts.put(key, nil)
	return nil
}

// verdictKey is one image, with the signatures it had, checked against one key set.
type verdictKey struct {
	keys       [sha256.Size]byte
	digest     string
	signatures string
}

// signaturesDigest is the digest of the signature image cosign attaches to ref (its
// sha256-<hex>.sig tag), "" when it has none.
func signaturesDigest(ctx context.Context, ref name.Digest, ropts []remote.Option) (string, error) {
	algorithm, hex, _ := strings.Cut(ref.DigestStr(), ":")
	desc, err := remote.Head(ref.Context().Tag(algorithm+"-"+hex+".sig"), append(ropts, remote.WithContext(ctx))...)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the signatures of '%s': %w", ref, err)
	}
	return desc.Digest.String(), nil
}

// maxVerdicts bounds the verdicts kept; past it they are all dropped (and read again).
const maxVerdicts = 4096

// verdicts caches signature verdicts: nil (verified) or a *notVerifiedError.
type verdicts struct {
	mu sync.Mutex
	m  map[verdictKey]error
}

func (v *verdicts) get(k verdictKey) (error, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	err, ok := v.m[k]
	return err, ok
}

func (v *verdicts) put(k verdictKey, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerdicts {
		v.m = map[verdictKey]error{}
	}
	v.m[k] = err
}
