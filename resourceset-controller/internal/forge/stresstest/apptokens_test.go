package stresstest_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sluice-gitops/sluice/shared/contracttest"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/forge"
)

// The GitHub App installation tokens are cached for every tenant's providers at once, keyed by
// the App, its installation, the API's address and the App's private key. This stress test
// replays the class of Argo CD's CVE-2025-55191 (a race in a shared credentials cache) on it:
// two Apps with installations of the same ID, and a tenant who knows one App's IDs but not its
// key, ask for tokens at once, many times, while the tokens expire under them. Each gets tokens
// created for its own App only; the one without the key gets none; and under the race detector
// (`make test-race`, part of `make test`) there is no data race.
//
// GitHub cannot be reached from the machines that run the tests: as in the forge's contract
// tests, the test server answers with the body GitHub documents (testdata/contract), checking
// each JWT against the App's public key as GitHub does.
//
// Checked against a reintroduced bug: with the App's key left out of the cache's key
// (cacheKey without x509.MarshalPKCS1PrivateKey), the tenant without the key is served the
// first App's cached token, and this test fails.
func TestGitHubAppTokenCacheUnderConcurrency(t *testing.T) {
	documented := documentedToken(t)
	apps := map[string]*rsa.PrivateKey{"123": newKey(t), "456": newKey(t)}
	var mu sync.Mutex
	issuedTo := map[string]string{} // token → App ID
	created := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v3/app/installations/1/access_tokens" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		appID, ok := verifiedApp(r, apps)
		if !ok {
			contracttest.WriteJSON(w, http.StatusUnauthorized, []byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		mu.Lock()
		created++
		token := fmt.Sprintf("ghs_app%s_%d", appID, created)
		issuedTo[token] = appID
		mu.Unlock()
		// Tokens that outlive the cache's 5-minute margin by a moment: cached, then replaced
		// while the other callers read them.
		body := maps.Clone(documented)
		body["token"] = token
		body["expires_at"] = time.Now().Add(5*time.Minute + 200*time.Millisecond).UTC().Format(time.RFC3339Nano)
		out, _ := json.Marshal(body)
		contracttest.WriteJSON(w, http.StatusCreated, out)
	}))
	t.Cleanup(srv.Close)

	secret := func(appID string, key *rsa.PrivateKey) map[string][]byte {
		return map[string][]byte{
			"githubAppID": []byte(appID), "githubAppInstallationID": []byte("1"),
			"githubAppPrivateKey": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
			"githubAppBaseURL":    []byte(srv.URL + "/api/v3"),
		}
	}
	tenants := []struct {
		name, app string
		data      map[string][]byte
	}{
		{name: "team-a", app: "123", data: secret("123", apps["123"])},
		{name: "team-b", app: "456", data: secret("456", apps["456"])},
		// Knows App 123's IDs and address, not its key.
		{name: "intruder", data: secret("123", newKey(t))},
	}

	const callers, rounds = 3, 25
	var wg sync.WaitGroup
	for _, tenant := range tenants {
		for range callers {
			wg.Go(func() {
				for range rounds {
					token, err := forge.GitHubToken(t.Context(), tenant.data, "https://github.com/octocat/Hello-World", srv.Client())
					mu.Lock()
					app, issued := issuedTo[token]
					mu.Unlock()
					switch {
					case tenant.app == "" && err == nil:
						t.Errorf("%s, without the App's key, got the token of App %s", tenant.name, app)
					case tenant.app == "" && !strings.Contains(err.Error(), "HTTP 401"):
						t.Errorf("%s: the error is %q, want GitHub's refusal", tenant.name, err)
					case tenant.app != "" && err != nil:
						t.Errorf("%s: %v", tenant.name, err)
					case tenant.app != "" && (!issued || app != tenant.app):
						t.Errorf("%s, of App %s, got a token created for App %q", tenant.name, tenant.app, app)
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// Each App's callers shared its cached tokens, which expired and were replaced a few times.
	if created < 2*2 || created > 2*callers*rounds/2 {
		t.Errorf("%d tokens were created for %d requests of two Apps: the cache is not shared or never expires", created, 2*callers*rounds)
	}
}

// documentedToken is GitHub's documented answer to a token's creation.
func documentedToken(t *testing.T) map[string]any {
	data, err := os.ReadFile("../testdata/contract/github/create-installation-access-token.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx contracttest.Fixture
	var body map[string]any
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fx.Response, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// verifiedApp is the App whose key signed the request's JWT, as its issuer claims.
func verifiedApp(r *http.Request, apps map[string]*rsa.PrivateKey) (string, bool) {
	signed, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", false
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(signed, claims, func(tok *jwt.Token) (any, error) {
		issuer, _ := tok.Claims.GetIssuer()
		key, ok := apps[issuer]
		if !ok {
			return nil, fmt.Errorf("no App %q", issuer)
		}
		return &key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithExpirationRequired())
	return claims.Issuer, err == nil
}

func newKey(t *testing.T) *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
