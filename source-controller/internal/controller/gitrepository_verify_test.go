package controller

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/sluice-gitops/sluice/shared/testserver"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

func verifyWith(mode sourcev1.GitVerificationMode, secret string) *sourcev1.GitRepositoryVerification {
	return &sourcev1.GitRepositoryVerification{Mode: mode, SecretRef: meta.LocalObjectReference{Name: secret}}
}

// OpenPGP signatures (spec.verify with armored public keys): a signed commit is verified and
// stored; an unsigned one, and one signed by a key the Secret does not hold, are refused and the
// last artifact stays. Tag and TagAndHEAD verify the annotated tag, and need a tag reference.
func TestGitRepositoryVerifyOpenPGP(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "signed")
	key, other := testserver.NewPGPKey(t), testserver.NewPGPKey(t)
	keyID := key.Entity.PrimaryKey.KeyIdString()
	signed := repo.CommitPGPSigned(t, "signed", map[string]string{"a": "1"}, key)
	repo.TagPGPSigned(t, "v1.0.0", key)
	repo.Tag(t, "v1.0.0-light", false)
	createSecret(t, ns, "pgp", map[string][]byte{"author.asc": key.ArmoredPublicKey})

	head := createRepo(t, ns, "head", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Verification: verifyWith("", "pgp")})
	g.Eventually(condition(head, meta.ReadyCondition), timeout).Should(HavePrefix("True|"))
	g.Expect(condition(head, sourcev1.SourceVerifiedCondition)(g)).To(Equal(
		"True|Succeeded|verified signature of commit '" + signed + "' with OpenPGP key " + keyID))
	g.Expect(getRepo(g, head).Status.SourceVerificationMode).To(HaveValue(Equal(sourcev1.ModeGitHEAD)))
	g.Expect(revision(head)(g)).To(Equal("master@sha1:" + signed))

	unsigned := repo.Commit(t, "unsigned", map[string]string{"a": "2"})
	poke(t, head)
	g.Eventually(condition(head, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"False|InvalidCommitSignature|signature verification of commit '" + unsigned + "' failed: not signed"))
	g.Expect(condition(head, meta.ReadyCondition)(g)).To(HavePrefix("False|InvalidCommitSignature|"))
	g.Expect(revision(head)(g)).To(Equal("master@sha1:"+signed), "an unverified revision is not stored")
	g.Expect(fetchArtifact(t, head)["a"]).To(Equal("1"))

	foreign := repo.CommitPGPSigned(t, "signed by another key", map[string]string{"a": "3"}, other)
	poke(t, head)
	g.Eventually(condition(head, sourcev1.SourceVerifiedCondition), timeout).Should(HavePrefix(
		"False|InvalidCommitSignature|signature verification of commit '" + foreign + "' failed: no trusted OpenPGP key verifies the signature"))
	g.Expect(revision(head)(g)).To(Equal("master@sha1:" + signed))

	tag := createRepo(t, ns, "tag", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{Tag: "v1.0.0"},
		Verification: verifyWith(sourcev1.ModeGitTagAndHEAD, "pgp")})
	g.Eventually(condition(tag, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"True|Succeeded|verified signature of tag 'v1.0.0' with OpenPGP key " + keyID + " and of commit '" + signed + "' with OpenPGP key " + keyID))
	g.Expect(revision(tag)(g)).To(Equal("v1.0.0@sha1:" + signed))
	g.Expect(getRepo(g, tag).Status.SourceVerificationMode).To(HaveValue(Equal(sourcev1.ModeGitTagAndHEAD)))

	light := createRepo(t, ns, "light", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{Tag: "v1.0.0-light"},
		Verification: verifyWith(sourcev1.ModeGitTag, "pgp")})
	g.Eventually(condition(light, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"False|InvalidGitObject|cannot verify tag 'v1.0.0-light': it is a lightweight tag, without a signature"))
	g.Expect(getRepo(g, light).Status.Artifact).To(BeNil())

	branch := createRepo(t, ns, "branch", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Verification: verifyWith(sourcev1.ModeGitTag, "pgp")})
	g.Eventually(condition(branch, meta.StalledCondition), timeout).Should(Equal(
		"True|InvalidVerificationMode|verification mode 'Tag' needs a tag reference (spec.ref.tag, semver or a refs/tags/ name)"))

	createSecret(t, ns, "empty", map[string][]byte{"note": []byte("no key here")})
	noKeys := createRepo(t, ns, "no-keys", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{Commit: signed},
		Verification: verifyWith(sourcev1.ModeGitHEAD, "empty")})
	g.Eventually(condition(noKeys, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"False|VerificationError|secret '" + ns + "/empty': no armored OpenPGP key ring or SSH public key found"))

	// Without spec.verify, the verification is forgotten.
	updateRepo(t, head, func(s *sourcev1.GitRepositorySpec) { s.Verification = nil })
	g.Eventually(revision(head), timeout).Should(Equal("master@sha1:" + foreign))
	g.Eventually(condition(head, sourcev1.SourceVerifiedCondition), timeout).Should(BeEmpty())
	g.Expect(getRepo(g, head).Status.SourceVerificationMode).To(BeNil())
}

// SSH signatures (Git's gpg.format=ssh) verify against authorized_keys lines; another key is
// refused; Tag mode verifies an SSH-signed annotated tag.
func TestGitRepositoryVerifySSH(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	server := testserver.NewGitServer(t, testserver.Options{})
	repo := server.NewRepo(t, "ssh-signed")
	key, other := testserver.NewKeyPair(t, ""), testserver.NewKeyPair(t, testserver.KeyECDSA)
	signed := repo.CommitSSHSigned(t, "signed", map[string]string{"a": "1"}, key)
	repo.TagSSHSigned(t, "v2.0.0", key)
	createSecret(t, ns, "ssh-keys", map[string][]byte{"authorized_keys": append(other.AuthorizedKey(), key.AuthorizedKey()...)})
	createSecret(t, ns, "other", map[string][]byte{"authorized_keys": other.AuthorizedKey()})
	fingerprint := ssh.FingerprintSHA256(key.PublicKey)

	head := createRepo(t, ns, "head", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Verification: verifyWith(sourcev1.ModeGitHEAD, "ssh-keys")})
	g.Eventually(condition(head, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"True|Succeeded|verified signature of commit '" + signed + "' with SSH key " + fingerprint))
	g.Eventually(revision(head), timeout).Should(Equal("master@sha1:" + signed))

	wrong := createRepo(t, ns, "wrong", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Verification: verifyWith(sourcev1.ModeGitHEAD, "other")})
	g.Eventually(condition(wrong, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"False|InvalidCommitSignature|signature verification of commit '" + signed + "' failed: no trusted SSH key verifies the signature of key " + fingerprint))
	g.Expect(getRepo(g, wrong).Status.Artifact).To(BeNil())

	tag := createRepo(t, ns, "tag", sourcev1.GitRepositorySpec{URL: repo.HTTPURL(), Reference: &sourcev1.GitRepositoryRef{SemVer: "2.x"},
		Verification: verifyWith(sourcev1.ModeGitTag, "ssh-keys")})
	g.Eventually(condition(tag, sourcev1.SourceVerifiedCondition), timeout).Should(Equal(
		"True|Succeeded|verified signature of tag 'v2.0.0' with SSH key " + fingerprint))
	g.Expect(revision(tag)(g)).To(Equal("v2.0.0@sha1:" + signed))
}
