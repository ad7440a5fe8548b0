package builder

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSlugify(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b" // the cut at 63 lands right after the '-'
	cases := []struct{ in, want string }{
		{"team1", "team1"},
		{"Team One", "team-one"},
		{"feature/JIRA-123_fix", "feature-jira-123-fix"},
		{"--leading and trailing--", "leading-and-trailing"},
		{"a   b...c", "a-b-c"},
		{"Ünïcødé ✓ ok", "n-c-d-ok"},
		{"", ""},
		{"!!!", ""},
		{"v1.2.3", "v1-2-3"},
		{strings.Repeat("x", 70), strings.Repeat("x", 63)},
		{long, strings.Repeat("a", 62)},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got := slugify(tc.in)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(len(got)).To(BeNumerically("<=", 63))
			g.Expect(got).To(MatchRegexp(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`))
		})
	}
}

func TestBool(t *testing.T) {
	cases := []struct {
		in      any
		want    bool
		wantErr string
	}{
		{true, true, ""},
		{false, false, ""},
		{"true", true, ""},
		{"True", true, ""},
		{" false ", false, ""},
		{"1", true, ""},
		{"", false, ""},
		{nil, false, ""},
		{float64(0), false, ""},
		{float64(2), true, ""},
		{int64(1), true, ""},
		{"maybe", false, `cannot convert "maybe" to a boolean`},
		{[]any{}, false, "cannot convert []interface {} to a boolean"},
	}
	for _, tc := range cases {
		g := NewWithT(t)
		got, err := toBool(tc.in)
		if tc.wantErr != "" {
			g.Expect(err).To(MatchError(tc.wantErr), "%#v", tc.in)
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), "%#v", tc.in)
		g.Expect(got).To(Equal(tc.want), "%#v", tc.in)
	}
}

// TestTemplateFunctions renders the extra functions through a template, where
// their output is read back as a typed YAML value.
func TestTemplateFunctions(t *testing.T) {
	g := NewWithT(t)
	tmpl, err := Parse(resourcesOf(t, `
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: << inputs.branch | slugify >>
    labels:
      enabled: << inputs.enabled | quote >>
  spec:
    suspend: << inputs.enabled | bool >>
    notSuspended: << inputs.disabled | bool >>
    settings: << inputs.settings | toYaml | nindent 6 >>
    inline: << inputs.settings | toYaml | quote >>
`), "")
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := tmpl.Build(t.Context(), inputsOf(t, `
- branch: Feature/Add_Login
  enabled: "true"
  disabled: "false"
  settings:
    size: 3
    tags: [a, b]
`), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contents(objects)).To(Equal(objectsOf(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: feature-add-login
  labels:
    enabled: "true"
spec:
  suspend: true
  notSuspended: false
  settings:
    size: 3
    tags: [a, b]
  inline: "size: 3\ntags:\n- a\n- b"
`)))
}
