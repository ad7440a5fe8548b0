package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		wantAlg digest.Algorithm
	}{
		{name: "defaults", opts: Options{}, wantAlg: digest.SHA256},
		{name: "sha384", opts: Options{DigestAlgorithm: digest.SHA384}, wantAlg: digest.SHA384},
		{name: "sha512", opts: Options{DigestAlgorithm: digest.SHA512}, wantAlg: digest.SHA512},
		{name: "unknown algorithm", opts: Options{DigestAlgorithm: "md5"}, wantErr: "unsupported artifact digest algorithm 'md5'"},
		{name: "blake3 is not in the contract", opts: Options{DigestAlgorithm: "blake3"}, wantErr: "unsupported"},
		{name: "negative max size", opts: Options{MaxSize: -1}, wantErr: "must not be negative"},
		{name: "negative records", opts: Options{RetentionRecords: -1}, wantErr: "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.opts.BasePath = filepath.Join(t.TempDir(), "a", "b")
			s, err := New(tt.opts)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.DigestAlgorithm).To(Equal(tt.wantAlg))
			g.Expect(s.BasePath).To(BeADirectory())
			g.Expect(s.AdvAddr).To(Equal("localhost"))
		})
	}
	_, err := New(Options{})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("storage path is required")))
}

func TestNewArtifactForAndURL(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{AdvAddr: "storage.local:9090", OpenArtifacts: true}) // signed: signedurl_test.go
	a := s.NewArtifactFor("GitRepository", testObject("podinfo"), "main@sha1:1234", "1234.tar.gz")
	g.Expect(a.Path).To(Equal("gitrepository/default/podinfo/1234.tar.gz"))
	g.Expect(a.URL).To(Equal("http://storage.local:9090/gitrepository/default/podinfo/1234.tar.gz"))
	g.Expect(a.Revision).To(Equal("main@sha1:1234"))
	g.Expect(a.Digest).To(BeEmpty())
	g.Expect(a.Size).To(BeNil())
	g.Expect(s.LocalPath(a)).To(Equal(filepath.Join(s.BasePath, "gitrepository", "default", "podinfo", "1234.tar.gz")))

	// The address changed between runs: the URL follows, the path does not.
	s2 := newTestStorage(t, Options{BasePath: s.BasePath, AdvAddr: "other:80", OpenArtifacts: true})
	s2.SetArtifactURL(&a)
	g.Expect(a.URL).To(Equal("http://other:80/gitrepository/default/podinfo/1234.tar.gz"))
}

func TestLocalPathStaysInside(t *testing.T) {
	s := newTestStorage(t, Options{})
	tests := []struct {
		path string
		want string // relative to BasePath; "" for refused
	}{
		{path: "gitrepository/default/app/x.tar.gz", want: "gitrepository/default/app/x.tar.gz"},
		{path: "/gitrepository/default/app/x.tar.gz", want: "gitrepository/default/app/x.tar.gz"},
		{path: "../../etc/passwd", want: "etc/passwd"},
		{path: "a/../../../../b/c", want: "b/c"},
		{path: "/../..", want: ""},
		{path: "", want: ""},
		{path: ".", want: ""},
		{path: "a\x00b", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			got := s.LocalPath(meta.Artifact{Path: tt.path})
			if tt.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(Equal(filepath.Join(s.BasePath, filepath.FromSlash(tt.want))))
			g.Expect(strings.HasPrefix(got, s.BasePath+string(filepath.Separator))).To(BeTrue())
		})
	}
}

func TestArtifactExist(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	a := s.NewArtifactFor("GitRepository", testObject("app"), "rev", "rev.tar.gz")
	g.Expect(s.ArtifactExist(a)).To(BeFalse())
	g.Expect(s.Copy(&a, strings.NewReader("x"))).To(Succeed())
	g.Expect(s.ArtifactExist(a)).To(BeTrue())
	link := a
	link.Path = "gitrepository/default/app/latest.tar.gz"
	_, err := s.Symlink(a, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.ArtifactExist(link)).To(BeFalse(), "a link is not an artifact")
	g.Expect(s.ArtifactExist(meta.Artifact{})).To(BeFalse())
	g.Expect(s.ArtifactExist(meta.Artifact{Path: "gitrepository"})).To(BeFalse(), "a directory is not an artifact")
}

func TestSymlink(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{AdvAddr: "sc:80", OpenArtifacts: true})
	a := s.NewArtifactFor("GitRepository", testObject("app"), "r1", "r1.tar.gz")
	g.Expect(s.Copy(&a, strings.NewReader("one"))).To(Succeed())
	url, err := s.Symlink(a, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(url).To(Equal("http://sc:80/gitrepository/default/app/latest.tar.gz"))
	link := filepath.Join(filepath.Dir(s.LocalPath(a)), "latest.tar.gz")
	target, err := os.Readlink(link)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal("r1.tar.gz"), "relative, so it resolves inside the storage")

	// Replaced by the next artifact; no temporary link is left.
	b := s.NewArtifactFor("GitRepository", testObject("app"), "r2", "r2.tar.gz")
	g.Expect(s.Copy(&b, strings.NewReader("two"))).To(Succeed())
	_, err = s.Symlink(b, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	content, err := os.ReadFile(link)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(Equal("two"))
	entries, err := os.ReadDir(filepath.Dir(link))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(3))

	for _, bad := range []string{"", ".", "..", "../x", "a/b", "a\x00", "r1.tar.gz"} {
		_, err := s.Symlink(a, bad)
		g.Expect(err).To(HaveOccurred(), "%q", bad)
	}
}

func TestRemoveAll(t *testing.T) {
	g := NewWithT(t)
	s := newTestStorage(t, Options{})
	a := s.NewArtifactFor("GitRepository", testObject("app"), "r1", "r1.tar.gz")
	g.Expect(s.Copy(&a, strings.NewReader("one"))).To(Succeed())
	_, err := s.Symlink(a, "latest.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	other := s.NewArtifactFor("GitRepository", testObject("other"), "r1", "r1.tar.gz")
	g.Expect(s.Copy(&other, strings.NewReader("one"))).To(Succeed())

	deleted, err := s.RemoveAll(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(Equal(filepath.Join(s.BasePath, "gitrepository", "default", "app")))
	g.Expect(deleted).NotTo(BeADirectory())
	g.Expect(s.ArtifactExist(other)).To(BeTrue())

	deleted, err = s.RemoveAll(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeEmpty())

	// Paths that would name the storage root (or above) are refused.
	for _, p := range []string{"", "x.tar.gz", "/x", "../x", "../../.."} {
		_, err := s.RemoveAll(meta.Artifact{Path: p})
		g.Expect(err).To(HaveOccurred(), "%q", p)
	}
	g.Expect(s.BasePath).To(BeADirectory())
	g.Expect(s.ArtifactExist(other)).To(BeTrue())
}
