package artifact

import (
	"net/mail"
	"strings"

	meta "github.com/fluxcd/pkg/apis/meta"
)

// Who wrote the revision of an artifact, where its source can tell: a key of
// status.artifact.metadata, read by the gating-controller to refuse the self-approval of a
// revision by its author (gating-controller/docs/gate.md, "Approvals").
const (
	// AuthorMetadataKey is written by the GitRepository: the author of its commit, as Git
	// shows it ("Name <email>").
	AuthorMetadataKey = "source.toolkit.fluxcd.io/author"
	// OCIAuthorsAnnotation is the OCI image annotation an OCIRepository copies into its
	// artifact's metadata with the others: a list of addresses, when the publisher set it.
	OCIAuthorsAnnotation = "org.opencontainers.image.authors"
)

// AuthorEmails are the e-mail addresses of the authors the artifact's metadata names, lower
// case; none when it names none or not as addresses.
func AuthorEmails(art *meta.Artifact) []string {
	if art == nil {
		return nil
	}
	var emails []string
	for _, key := range []string{AuthorMetadataKey, OCIAuthorsAnnotation} {
		v := strings.TrimSpace(art.Metadata[key])
		if v == "" {
			continue
		}
		list, err := mail.ParseAddressList(v)
		if err != nil {
			continue // free text: nobody the gating-controller could match
		}
		for _, a := range list {
			emails = append(emails, strings.ToLower(a.Address))
		}
	}
	return emails
}

// GitAuthor is the value of AuthorMetadataKey for a commit's author; "" without an address.
func GitAuthor(name, email string) string {
	if strings.TrimSpace(email) == "" {
		return ""
	}
	return (&mail.Address{Name: name, Address: email}).String()
}
