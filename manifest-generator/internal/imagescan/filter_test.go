package imagescan

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseFilter(t *testing.T) {
	tags := []string{"1.0.0", "v1.2.3", "1.2", "1.10.0-rc.1", "2.0.0", "latest", "main-abc123", "1.", "release-1.2-rc"}
	tests := []struct {
		filter string
		kind   Kind
		str    string
		match  []string
	}{
		{"", KindGlob, "glob:*", tags},
		{"*", KindGlob, "glob:*", tags},
		{"glob:*", KindGlob, "glob:*", tags},
		{"latest", KindGlob, "glob:latest", []string{"latest"}},
		{"glob:1.*", KindGlob, "glob:1.*", []string{"1.0.0", "1.2", "1.10.0-rc.1", "1."}},
		{"1.*-rc", KindGlob, "glob:1.*-rc", nil},
		{"*-rc*", KindGlob, "glob:*-rc*", []string{"1.10.0-rc.1", "release-1.2-rc"}},
		{"main-*", KindGlob, "glob:main-*", []string{"main-abc123"}},
		{"*.*.*", KindGlob, "glob:*.*.*", []string{"1.0.0", "v1.2.3", "1.10.0-rc.1", "2.0.0"}},
		{"semver:~1", KindSemver, "semver:~1", []string{"1.0.0", "v1.2.3", "1.2"}},
		{"semver:>=1.2.0 <2", KindSemver, "semver:>=1.2.0 <2", []string{"v1.2.3", "1.2"}},
		{"semver:>=1.10.0-0", KindSemver, "semver:>=1.10.0-0", []string{"1.10.0-rc.1", "2.0.0"}},
		{"semver:*", KindSemver, "semver:*", []string{"1.0.0", "v1.2.3", "1.2", "2.0.0"}},
		{"regex:^1\\.[0-9]+$", KindRegex, "regex:^1\\.[0-9]+$", []string{"1.2"}},
		// Unanchored, as Flux v1's regexp.MatchString.
		{"regexp:rc", KindRegex, "regex:rc", []string{"1.10.0-rc.1", "release-1.2-rc"}},
		{"regexp:^main-[a-f0-9]+$", KindRegex, "regex:^main-[a-f0-9]+$", []string{"main-abc123"}},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			g := NewWithT(t)
			f, err := ParseFilter(tt.filter)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.Kind()).To(Equal(tt.kind))
			g.Expect(f.String()).To(Equal(tt.str))
			var got []string
			for _, tag := range tags {
				if f.Matches(tag) {
					got = append(got, tag)
				}
			}
			if tt.match == nil {
				g.Expect(got).To(BeEmpty())
			} else {
				g.Expect(got).To(Equal(tt.match))
			}
		})
	}
}

func TestParseFilterErrors(t *testing.T) {
	tests := []struct {
		filter, message string
	}{
		{"semver:1.x.y", `semver filter "1.x.y": improper constraint`},
		{"semver:>=a", `semver filter ">=a": improper constraint`},
		{"semver:", `semver filter "": empty constraint`},
		{"regex:(", `regex filter "(": error parsing regexp: missing closing )`},
		{"regexp:a[", `regex filter "a[": error parsing regexp: missing closing ]`},
		{"regex:", `regex filter "": empty expression`},
		{"glob:", `glob filter "": empty pattern`},
		{"semvar:1.x", `glob filter "semvar:1.x": ":" cannot appear in a tag`},
		{"1.?", `glob filter "1.?": "?" cannot appear in a tag`},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ParseFilter(tt.filter)
			g.Expect(err).To(MatchError(ContainSubstring(tt.message)))
		})
	}
}
