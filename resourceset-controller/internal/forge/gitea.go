package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

// giteaPageSize is the page size asked of Gitea: its default maximum (MAX_RESPONSE_ITEMS), so
// that every page is full until the last.
const giteaPageSize = 50

// maxPageBytes bounds one page of a forge's answer.
const maxPageBytes = 8 << 20

// gitea lists a repository through Gitea's REST API (/api/v1), which Forgejo serves too.
type gitea struct {
	base        *url.URL
	owner, repo string
	token       string
	http        *http.Client
}

// NewGitea is the Lister of a Gitea repository URL.
func NewGitea(opts Options) (Lister, error) {
	base, owner, repo, err := splitRepoURL(opts.URL)
	if err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &gitea{base: base, owner: owner, repo: repo, token: opts.Token, http: hc}, nil
}

type giteaBranch struct {
	Name   string `json:"name"`
	Commit struct {
		ID string `json:"id"`
	} `json:"commit"`
}

type giteaTag struct {
	Name   string `json:"name"`
	Commit struct {
		SHA string `json:"sha"`
	} `json:"commit"`
}

type giteaPull struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
	User   struct {
		Login string `json:"login"`
	} `json:"user"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Head struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
}

func (g *gitea) List(ctx context.Context, kind Kind) ([]Item, error) {
	switch kind {
	case Branches:
		return giteaList(ctx, g, "branches", nil, func(b giteaBranch) Item {
			return Item{ID: inputs.ID(b.Name), SHA: b.Commit.ID, Branch: b.Name}
		})
	case Tags:
		return giteaList(ctx, g, "tags", nil, func(t giteaTag) Item {
			return Item{ID: inputs.ID(t.Name), SHA: t.Commit.SHA, Tag: t.Name}
		})
	case Requests:
		return giteaList(ctx, g, "pulls", url.Values{"state": {"open"}}, func(p giteaPull) Item {
			it := Item{ID: strconv.FormatInt(p.Number, 10), SHA: p.Head.SHA, Branch: p.Head.Ref, Title: p.Title, Author: p.User.Login}
			for _, l := range p.Labels {
				it.Labels = append(it.Labels, l.Name)
			}
			return it
		})
	}
	return nil, fmt.Errorf("Gitea has no %s", kind)
}

// giteaList reads every page of a listing of the repository: a page shorter than the page size
// is the last.
func giteaList[T any](ctx context.Context, g *gitea, what string, query url.Values, item func(T) Item) ([]Item, error) {
	whole := what + " of " + g.owner + "/" + g.repo
	batch, err := allPages(ctx, "Gitea", whole, giteaPageSize, func(n int) ([]T, int, error) {
		q := url.Values{"page": {strconv.Itoa(n)}, "limit": {strconv.Itoa(giteaPageSize)}}
		for k, v := range query {
			q[k] = v
		}
		u := g.base.JoinPath("api", "v1", "repos", g.owner, g.repo, what)
		u.RawQuery = q.Encode()
		var page []T
		if err := g.get(ctx, u, &page); err != nil {
			return nil, 0, fmt.Errorf("listing the %s: %w", whole, err)
		}
		if len(page) < giteaPageSize {
			return page, 0, nil
		}
		return page, n + 1, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(batch))
	for i, b := range batch {
		out[i] = item(b)
	}
	return out, nil
}

func (g *gitea) get(ctx context.Context, u *url.URL, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if g.token != "" {
		req.Header.Set("Authorization", "token "+g.token)
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return giteaStatusError(u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxPageBytes {
		return fmt.Errorf("GET %s: the answer is larger than %d MiB", u.Redacted(), maxPageBytes>>20)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return errors.New("the answer is not the JSON Gitea sends: is the URL that of a Gitea repository?")
	}
	return nil
}

// giteaStatusError says what an unsuccessful answer means for the user.
func giteaStatusError(u *url.URL, code int) error {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("GET %s: %d %s: authentication failed: check the token of spec.secretRef", u.Redacted(), code, http.StatusText(code))
	case http.StatusNotFound:
		return fmt.Errorf("GET %s: 404 Not Found: no such repository, or the token may not read it", u.Redacted())
	}
	return fmt.Errorf("GET %s: %d %s", u.Redacted(), code, strings.TrimSpace(http.StatusText(code)))
}
