package inputs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// pushTags pushes one distinct artifact per tag to apps/manifests and returns the digests.
func pushTags(t *testing.T, reg *testserver.Registry, tags ...string) map[string]string {
	t.Helper()
	digests := map[string]string{}
	for _, tag := range tags {
		digests[tag] = reg.PushArtifact(t, "apps/manifests:"+tag,
			map[string]string{"cm.yaml": "kind: ConfigMap\nmetadata:\n  name: " + tag + "\n"},
			map[string]string{"org.opencontainers.image.revision": tag})
	}
	return digests
}

func TestOCIArtifactTags(t *testing.T) {
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	digests := pushTags(t, reg, "1.0.0", "1.1.0", "2.0.0-rc.1", "v2.0.0", "latest", "dev-abc")
	url := "oci://" + reg.Host() + "/apps/manifests"

	for _, tc := range []struct {
		name   string
		filter inputs.Filter
		want   []string
	}{
		{"no filter: descending byte order", inputs.Filter{},
			[]string{"v2.0.0", "latest", "dev-abc", "2.0.0-rc.1", "1.1.0", "1.0.0"}},
		{"semver: versions in range, highest first, a leading v allowed", inputs.Filter{SemVer: ">=1.0.0"},
			[]string{"v2.0.0", "1.1.0", "1.0.0"}},
		{"semver with pre-releases", inputs.Filter{SemVer: ">=1.0.0-0"},
			[]string{"v2.0.0", "2.0.0-rc.1", "1.1.0", "1.0.0"}},
		{"semver and excludeTag", inputs.Filter{SemVer: "*", ExcludeTag: "^v"},
			[]string{"1.1.0", "1.0.0"}},
		{"includeTag", inputs.Filter{IncludeTag: `^(dev-|latest)`},
			[]string{"latest", "dev-abc"}},
		{"semver and limit", inputs.Filter{SemVer: ">=1.0.0", Limit: 2},
			[]string{"v2.0.0", "1.1.0"}},
		{"limit without semver", inputs.Filter{Limit: 1},
			[]string{"v2.0.0"}},
		{"nothing matches", inputs.Filter{SemVer: ">=3.0.0"},
			[]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := inputs.OCIArtifactTags(context.Background(), url, tc.filter, false, reg.RemoteOptions()...)
			g.Expect(err).NotTo(HaveOccurred())
			tags := []string{}
			for _, in := range got {
				g.Expect(in).To(HaveLen(3))
				tag := in["tag"].(string)
				tags = append(tags, tag)
				g.Expect(in["digest"]).To(Equal(digests[tag]), "digest of %s", tag)
				g.Expect(in["id"]).To(Equal(inputs.ID(tag)), "the id of the tag, as flux-operator gives")
			}
			g.Expect(tags).To(Equal(tc.want))
			g.Expect(ids(got)).To(HaveLen(len(tc.want)), "ids are unique")
		})
	}

	t.Run("ids are stable", func(t *testing.T) {
		g := NewWithT(t)
		first, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{}, false, reg.RemoteOptions()...)
		g.Expect(err).NotTo(HaveOccurred())
		pushTags(t, reg, "0.9.0")
		second, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{}, false, reg.RemoteOptions()...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(second).To(HaveLen(len(first) + 1))
		g.Expect(second[:len(first)]).To(Equal(first))
	})

	t.Run("insecure allows the plain HTTP registry", func(t *testing.T) {
		g := NewWithT(t)
		got, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{SemVer: "~1.1"}, true, reg.RemoteOptions()...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(1))
		g.Expect(got[0]).To(HaveKeyWithValue("digest", digests["1.1.0"]))
	})

	t.Run("a new digest for a moved tag", func(t *testing.T) {
		g := NewWithT(t)
		moved := reg.PushArtifact(t, "apps/manifests:latest", map[string]string{"cm.yaml": "moved\n"}, nil)
		got, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{IncludeTag: "^latest$"}, false, reg.RemoteOptions()...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(HaveLen(1))
		g.Expect(got[0]["digest"]).To(Equal(moved))
		g.Expect(moved).NotTo(Equal(digests["latest"]))
	})

	t.Run("an unknown repository", func(t *testing.T) {
		g := NewWithT(t)
		_, err := inputs.OCIArtifactTags(context.Background(), "oci://"+reg.Host()+"/apps/missing", inputs.Filter{}, false, reg.RemoteOptions()...)
		g.Expect(err).To(MatchError(ContainSubstring("listing the tags of " + reg.Host() + "/apps/missing")))
		g.Expect(inputs.IsTerminal(err)).To(BeFalse())
	})

	t.Run("a cancelled context", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := inputs.OCIArtifactTags(ctx, url, inputs.Filter{}, false, reg.RemoteOptions()...)
		g.Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "got %v", err)
	})
}

func TestOCIArtifactTagsInvalidSpec(t *testing.T) {
	for _, tc := range []struct {
		name    string
		url     string
		filter  inputs.Filter
		field   string
		wantErr string
	}{
		{"includeTag", "oci://127.0.0.1:1/apps", inputs.Filter{IncludeTag: "(dev"}, "includeTag", `invalid filter.includeTag "(dev": error parsing regexp`},
		{"excludeTag", "oci://127.0.0.1:1/apps", inputs.Filter{ExcludeTag: "[a-"}, "excludeTag", `invalid filter.excludeTag "[a-"`},
		{"semver", "oci://127.0.0.1:1/apps", inputs.Filter{SemVer: "not a range"}, "semver", `invalid filter.semver "not a range"`},
		{"not oci://", "https://127.0.0.1:1/apps", inputs.Filter{}, "", `invalid url "https://127.0.0.1:1/apps": it must start with oci://`},
		{"no host", "oci://apps/manifests", inputs.Filter{}, "", `invalid url "oci://apps/manifests"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			// Nothing listens on port 1: a spec error is found before any request.
			_, err := inputs.OCIArtifactTags(context.Background(), tc.url, tc.filter, false)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(inputs.IsTerminal(err)).To(BeTrue())
			if tc.field != "" {
				var invalid *inputs.InvalidFilterError
				g.Expect(errors.As(err, &invalid)).To(BeTrue())
				g.Expect(invalid.Field).To(Equal(tc.field))
			}
		})
	}
}

func TestOCIArtifactTagsBasicAuth(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := "plain HTTP"
		if tls {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) {
			reg := testserver.NewRegistry(t, testserver.RegistryOptions{Username: "oci", Password: "s3cret", TLS: tls})
			digests := pushTags(t, reg, "1.0.0", "1.1.0")
			url := "oci://" + reg.Host() + "/apps/manifests"

			t.Run("right credentials", func(t *testing.T) {
				g := NewWithT(t)
				got, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{SemVer: "1.x"}, false, reg.RemoteOptions()...)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(HaveLen(2))
				g.Expect(got[0]).To(HaveKeyWithValue("tag", "1.1.0"))
				g.Expect(got[0]).To(HaveKeyWithValue("digest", digests["1.1.0"]))
			})

			t.Run("wrong credentials", func(t *testing.T) {
				g := NewWithT(t)
				_, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{}, false,
					remote.WithAuth(&authn.Basic{Username: "oci", Password: "wrong-pass"}), remote.WithTransport(reg.Transport()))
				g.Expect(err).To(MatchError(ContainSubstring("UNAUTHORIZED")))
				g.Expect(err.Error()).NotTo(ContainSubstring("wrong-pass"))
				g.Expect(inputs.IsTerminal(err)).To(BeFalse())
			})

			t.Run("no credentials", func(t *testing.T) {
				g := NewWithT(t)
				_, err := inputs.OCIArtifactTags(context.Background(), url, inputs.Filter{}, false, remote.WithTransport(reg.Transport()))
				g.Expect(err).To(MatchError(ContainSubstring("UNAUTHORIZED")))
			})
		})
	}
}
