package forge

import (
	"strings"
	"testing"
)

func TestGitLabRefSlugAsCIRefSlug(t *testing.T) {
	for ref, want := range map[string]string{
		"main":                         "main",
		"Feature/Login_Page":           "feature-login-page",
		"v1.2.3":                       "v1-2-3",
		"-leading/and/trailing-":       "leading-and-trailing",
		"ünïcode-branch":               "n-code-branch",
		strings.Repeat("a", 70):        strings.Repeat("a", 63),
		strings.Repeat("b", 62) + "/c": strings.Repeat("b", 62),
		"///":                          "",
	} {
		if got := refSlug(ref); got != want {
			t.Errorf("refSlug(%q) = %q, want %q", ref, got, want)
		}
	}
}
