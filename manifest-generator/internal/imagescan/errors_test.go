package imagescan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// Whatever a registry answers, the error of a failed scan quotes none of it: an error answer
// keeps its status and the codes of its OCI error body, never their messages or details, the
// body that is not JSON, a token service's answer, or the location a redirect pointed to.
func TestRegistryErrorsQuoteNoBody(t *testing.T) {
	const secret = "internal-s3cret"
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	reg.PushImage(t, "app", "1.0.0", epoch)
	// The registry's own token service: the realm of its challenges.
	challenge := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, secret)
	}
	answers := map[string]func(w http.ResponseWriter, r *http.Request){
		"denied": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"%s","detail":{"token":"%s"}},{"code":"DENIED"},{"code":"NAME_UNKNOWN","message":"%s"}]}`, secret, secret, secret)
		},
		"html": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<html><h1>%s</h1>\n%s</html>", secret, secret)
		},
		"odd-codes": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"errors":[{"code":"%s"},{"code":"A%060d"},{"code":"UNKNOWN"}]}`, secret, 0)
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("token") == "" {
				http.Redirect(w, r, r.URL.Path+"/"+secret+"?token="+secret, http.StatusTemporaryRedirect)
				return
			}
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, secret)
		},
		"no-token": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, "{\"details\": %q,\n \"refresh_token\": %q}", secret, secret)
				return
			}
			challenge(w, r)
		},
		"token-refused": func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`, secret)
				return
			}
			challenge(w, r)
		},
	}
	// answer is the name of the answer of the subtest: to the tag lists, where they redirect,
	// or, for the token services, to every request.
	var answer atomic.Value
	answer.Store("")
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		name := answer.Load().(string)
		if f := answers[name]; f != nil && (isTagList(r) || strings.Contains(r.URL.Path, secret) || strings.HasPrefix(name, "token") || name == "no-token") {
			f(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
	repo := repository(t, host, "app")

	for _, tc := range []struct {
		answer string
		want   string
	}{
		{"denied", "GET http://" + host + "/v2/app/tags/list: HTTP 403 Forbidden (DENIED, NAME_UNKNOWN)"},
		{"html", "GET http://" + host + "/v2/app/tags/list: HTTP 400 Bad Request"},
		{"odd-codes", "GET http://" + host + "/v2/app/tags/list: HTTP 404 Not Found (UNKNOWN)"},
		{"redirect", "GET http://" + host + "/v2/app/tags/list: HTTP 404 Not Found"},
		{"no-token", "no token in bearer response"},
		{"token-refused", "GET http://" + host + "/token: HTTP 401 Unauthorized (UNAUTHORIZED)"},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			g := NewWithT(t)
			answer.Store(tc.answer)
			s := New(Config{Addresses: allowLoopback, Clock: newClock(), RequestTimeout: 30 * time.Second})
			_, err := s.Tags(context.Background(), repo, Options{})
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix("listing tags of " + repo.Name() + ": "))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		})
	}

	// A missing tag of a glob filter is still passed over, an error answer still a failure.
	t.Run("status kept", func(t *testing.T) {
		g := NewWithT(t)
		answer.Store("odd-codes")
		s := New(Config{Addresses: allowLoopback, Clock: newClock()})
		_, _, err := s.Created(context.Background(), repo.Tag("1.0.0"), Options{})
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = s.Created(context.Background(), repo.Tag("missing"), Options{})
		var rerr *RegistryError
		g.Expect(errors.As(err, &rerr)).To(BeTrue(), "%v", err)
		g.Expect(rerr.StatusCode).To(Equal(http.StatusNotFound))
		g.Expect(rerr.Codes).To(Equal([]string{"MANIFEST_UNKNOWN"}))
	})
}
