package forge

import (
	"context"
	"fmt"
	"net/http"
)

// Lister lists what a repository has of one kind. It returns everything it finds (Select
// filters), but never more than MaxItems: past that it fails with a *TooManyError, so that a
// huge repository costs a bounded number of requests.
type Lister interface {
	List(ctx context.Context, kind Kind) ([]Item, error)
}

// Options reach a repository.
type Options struct {
	// URL is the repository's address, e.g. https://gitea.example.com/team/app.
	URL string
	// Token authenticates to the forge's API; empty is anonymous.
	Token string
	// HTTPClient carries the TLS settings (spec.certSecretRef) and the timeouts.
	HTTPClient *http.Client
}

// PageSize is the number of items asked for per request of a forge's API.
const PageSize = 100

// MaxItems bounds a listing: the maximum of spec.filter.limit, so that any limit can be served
// from a listing that is not cut short.
const MaxItems = 10000

// TooManyError says a listing stopped at MaxItems.
type TooManyError struct {
	// What was listed, e.g. "branches of https://gitea.example.com/team/app".
	What string
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("more than %d %s: Sluice lists at most %d", MaxItems, e.What, MaxItems)
}

// Pages bounds a paginated listing: Add counts the items of each page and fails past MaxItems.
type Pages struct {
	What string
	n    int
}

// Add counts n more items.
func (p *Pages) Add(n int) error {
	p.n += n
	if p.n > MaxItems {
		return &TooManyError{What: p.What}
	}
	return nil
}

// allPages asks for every page of a listing, from page 1, following the next page number the
// forge answers with (0 at the last page), and stops with a *TooManyError past MaxItems, or past
// the pages that hold MaxItems at pageSize items each (a forge that keeps answering with empty or
// short pages stops there too). forge names it in the error of a page number that goes backwards.
func allPages[T any](ctx context.Context, forge, what string, pageSize int, page func(n int) (items []T, next int, err error)) ([]T, error) {
	count := Pages{What: what}
	maxPages := MaxItems/pageSize + 1
	var all []T
	for n, asked := 1, 1; ; asked++ {
		if asked > maxPages {
			return nil, &TooManyError{What: what}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		items, next, err := page(n)
		if err != nil {
			return nil, err
		}
		if err := count.Add(len(items)); err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == 0 {
			return all, nil
		}
		if next <= n {
			return nil, fmt.Errorf("listing the %s: %s sent page %d after page %d", what, forge, next, n)
		}
		n = next
	}
}

// KindOf is what a provider type lists, and whether it is one of the forge or Git types.
func KindOf(providerType string) (Kind, bool) {
	switch providerType {
	case "GiteaBranch", "GitHubBranch", "GitLabBranch", "GitBranch":
		return Branches, true
	case "GiteaTag", "GitHubTag", "GitLabTag", "GitTag":
		return Tags, true
	case "GiteaPullRequest", "GitHubPullRequest", "GitLabMergeRequest":
		return Requests, true
	case "GitLabEnvironment":
		return Environments, true
	}
	return 0, false
}
