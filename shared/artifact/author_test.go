package artifact

import (
	"testing"

	meta "github.com/fluxcd/pkg/apis/meta"
)

func TestAuthorEmails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		want     []string
	}{
		{"none", nil, nil},
		{"git author", map[string]string{AuthorMetadataKey: GitAuthor("Ana Lima", "Ana@Example.com")}, []string{"ana@example.com"}},
		{"git author with a quoted name", map[string]string{AuthorMetadataKey: GitAuthor(`Bo "the builder", Jr.`, "bo@example.com")}, []string{"bo@example.com"}},
		{"oci authors list", map[string]string{OCIAuthorsAnnotation: "Ana <ana@example.com>, bo@example.com"}, []string{"ana@example.com", "bo@example.com"}},
		{"oci free text", map[string]string{OCIAuthorsAnnotation: "The platform team"}, nil},
		{"no address", map[string]string{AuthorMetadataKey: GitAuthor("Ana", "")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AuthorEmails(&meta.Artifact{Metadata: tc.metadata})
			if len(got) != len(tc.want) {
				t.Fatalf("AuthorEmails = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("AuthorEmails = %q, want %q", got, tc.want)
				}
			}
		})
	}
}
