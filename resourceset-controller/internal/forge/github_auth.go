package forge

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-github/v73/github"
)

// The keys of a GitHub provider's Secret (spec.secretRef), as Flux reads them.
const (
	// GitHubPasswordKey holds a token (a personal access token), as in a Flux Git Secret.
	GitHubPasswordKey = "password"
	// GitHubTokenKey holds a token, the alternative to GitHubPasswordKey.
	GitHubTokenKey = "token"
	// GitHubAppIDKey is the numeric ID of a GitHub App. Its presence selects App authentication.
	GitHubAppIDKey = "githubAppID"
	// GitHubAppInstallationIDKey is the numeric ID of the App's installation.
	GitHubAppInstallationIDKey = "githubAppInstallationID"
	// GitHubAppInstallationOwnerKey is the organization or user the App is installed for, the
	// alternative to GitHubAppInstallationIDKey.
	GitHubAppInstallationOwnerKey = "githubAppInstallationOwner"
	// GitHubAppPrivateKeyKey is the App's private key, PEM-encoded RSA (PKCS#1 or PKCS#8).
	GitHubAppPrivateKeyKey = "githubAppPrivateKey"
	// GitHubAppBaseURLKey is the API's address, e.g. https://github.example.com/api/v3. Without
	// it the API is the repository's: https://api.github.com, or https://<host>/api/v3 for a
	// GitHub Enterprise Server.
	GitHubAppBaseURLKey = "githubAppBaseURL"
)

// GitHubToken is the token a GitHub provider authenticates with, from the data of its Secret:
//   - nil data (no secretRef): none, the API is used anonymously;
//   - without githubAppID: the value of password, else of token;
//   - with githubAppID: an installation token of the GitHub App, created through the API with a
//     JWT signed by githubAppPrivateKey, for the installation githubAppInstallationID or the one
//     of githubAppInstallationOwner (an organization, else a user). Installation tokens last an
//     hour; they are reused until five minutes before they expire.
//
// repoURL is the provider's URL, whose host gives the API's address when githubAppBaseURL is
// not set; httpClient carries the TLS settings. Errors name the missing or invalid keys, never
// their values.
func GitHubToken(ctx context.Context, data map[string][]byte, repoURL string, httpClient *http.Client) (string, error) {
	if data == nil {
		return "", nil
	}
	if _, ok := data[GitHubAppIDKey]; !ok {
		for _, k := range []string{GitHubPasswordKey, GitHubTokenKey} {
			if v := strings.TrimSpace(string(data[k])); v != "" {
				return v, nil
			}
		}
		return "", fmt.Errorf("the secret has neither a %q nor a %q key for a token, nor a %q key for a GitHub App",
			GitHubPasswordKey, GitHubTokenKey, GitHubAppIDKey)
	}
	app, err := gitHubAppOf(data, repoURL)
	if err != nil {
		return "", err
	}
	return appTokens.get(ctx, app, httpClient)
}

// gitHubApp is what identifies a GitHub App installation.
type gitHubApp struct {
	id             int64
	installationID int64
	owner          string
	key            *rsa.PrivateKey
	baseURL        string
}

func gitHubAppOf(data map[string][]byte, repoURL string) (gitHubApp, error) {
	var app gitHubApp
	value := func(k string) string { return strings.TrimSpace(string(data[k])) }

	id, err := strconv.ParseInt(value(GitHubAppIDKey), 10, 64)
	if err != nil || id <= 0 {
		return app, fmt.Errorf("the secret's %q is not the numeric ID of a GitHub App", GitHubAppIDKey)
	}
	app.id = id

	installation, owner := value(GitHubAppInstallationIDKey), value(GitHubAppInstallationOwnerKey)
	switch {
	case installation != "" && owner != "":
		return app, fmt.Errorf("the secret sets both %q and %q: keep one of them",
			GitHubAppInstallationIDKey, GitHubAppInstallationOwnerKey)
	case installation != "":
		if app.installationID, err = strconv.ParseInt(installation, 10, 64); err != nil || app.installationID <= 0 {
			return app, fmt.Errorf("the secret's %q is not the numeric ID of an installation", GitHubAppInstallationIDKey)
		}
	case owner != "":
		app.owner = owner
	default:
		return app, fmt.Errorf("the secret has %q but neither %q nor %q: GitHub App authentication needs one of them",
			GitHubAppIDKey, GitHubAppInstallationIDKey, GitHubAppInstallationOwnerKey)
	}

	pem := data[GitHubAppPrivateKeyKey]
	if len(pem) == 0 {
		return app, fmt.Errorf("the secret has %q but no %q", GitHubAppIDKey, GitHubAppPrivateKeyKey)
	}
	// golang-jwt reads PKCS#1 and PKCS#8 PEM blocks. Its error is not quoted: it says nothing
	// useful and this is key material.
	if app.key, err = jwt.ParseRSAPrivateKeyFromPEM(pem); err != nil {
		return app, fmt.Errorf("the secret's %q is not a PEM-encoded RSA private key", GitHubAppPrivateKeyKey)
	}

	if base := value(GitHubAppBaseURLKey); base != "" {
		app.baseURL = base
	} else {
		repo, err := parseGitHubURL(repoURL)
		if err != nil {
			return app, err
		}
		if repo.enterprise {
			app.baseURL = repo.scheme + "://" + repo.host + "/api/v3/"
		}
	}
	return app, nil
}

// client is a go-github client authenticated as the App itself, with a JWT signed by its key:
// GitHub accepts an issue time up to a minute in the past and a lifetime up to ten minutes.
func (app gitHubApp) client(httpClient *http.Client, now time.Time) (*github.Client, error) {
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(app.id, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(app.key)
	if err != nil {
		return nil, errors.New("signing the GitHub App's JWT with githubAppPrivateKey failed")
	}
	client := github.NewClient(httpClient).WithAuthToken(signed)
	if app.baseURL != "" {
		if client, err = client.WithEnterpriseURLs(app.baseURL, app.baseURL); err != nil {
			return nil, fmt.Errorf("the secret's %q is not a URL", GitHubAppBaseURLKey)
		}
	}
	return client, nil
}

// installationToken creates an installation token, finding the installation of the owner first
// when the Secret names an owner.
func (app gitHubApp) installationToken(ctx context.Context, httpClient *http.Client) (*github.InstallationToken, error) {
	client, err := app.client(httpClient, time.Now())
	if err != nil {
		return nil, err
	}
	id := app.installationID
	if id == 0 {
		inst, _, orgErr := client.Apps.FindOrganizationInstallation(ctx, app.owner)
		if orgErr != nil {
			var userErr error
			if inst, _, userErr = client.Apps.FindUserInstallation(ctx, app.owner); userErr != nil {
				return nil, gitHubError(fmt.Sprintf("GitHub App authentication: finding the App's installation for %q (as an organization, then as a user)", app.owner), userErr)
			}
		}
		id = inst.GetID()
	}
	tok, _, err := client.Apps.CreateInstallationToken(ctx, id, nil)
	if err != nil {
		return nil, gitHubError(fmt.Sprintf("GitHub App authentication: creating a token for installation %d of App %d", id, app.id), err)
	}
	if tok.GetToken() == "" {
		return nil, fmt.Errorf("GitHub App authentication: GitHub sent no token for installation %d of App %d", id, app.id)
	}
	return tok, nil
}

// cacheKey identifies the App installation without holding the key: a digest of the key's
// bytes with the IDs and the address.
func (app gitHubApp) cacheKey() [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(app.id))
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(app.installationID))
	h.Write(n[:])
	fmt.Fprintf(h, "%q %q ", app.owner, app.baseURL)
	h.Write(x509.MarshalPKCS1PrivateKey(app.key))
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	return key
}

// appTokenMargin is how long before its expiry an installation token is replaced.
const appTokenMargin = 5 * time.Minute

// appTokens caches installation tokens: a provider reconciled every few minutes would otherwise
// create a token each time, and GitHub limits the rate of that too.
var appTokens = &appTokenCache{tokens: map[[sha256.Size]byte]cachedToken{}}

type cachedToken struct {
	token   string
	expires time.Time
}

type appTokenCache struct {
	mu     sync.Mutex
	tokens map[[sha256.Size]byte]cachedToken
}

func (c *appTokenCache) get(ctx context.Context, app gitHubApp, httpClient *http.Client) (string, error) {
	key := app.cacheKey()
	c.mu.Lock()
	cached, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && time.Until(cached.expires) > appTokenMargin {
		return cached.token, nil
	}
	tok, err := app.installationToken(ctx, httpClient)
	if err != nil {
		return "", err
	}
	expires := tok.GetExpiresAt().Time
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for k, t := range c.tokens {
		if t.expires.Sub(now) <= appTokenMargin {
			delete(c.tokens, k)
		}
	}
	if expires.Sub(now) > appTokenMargin {
		c.tokens[key] = cachedToken{token: tok.GetToken(), expires: expires}
	}
	return tok.GetToken(), nil
}
