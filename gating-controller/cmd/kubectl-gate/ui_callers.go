package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// In a cluster the page is served to many people, none of whom the server is: each request
// carries its caller's own Kubernetes token (an Authorization header set by an authenticating
// proxy, or the session cookie of a token pasted in the sign-in page), the API server says who
// it is (SelfSubjectReview), and everything the page reads and does is done with that token.
// The server has no credentials of its own.

const (
	sessionCookie = "sluice-session"
	// maxTokenSize bounds a pasted token; service account and OIDC tokens are a few KiB.
	maxTokenSize = 16 << 10
)

// callers holds one dashboard per caller token, each with the watches of its flow.
type callers struct {
	// base is the API server's address and CA, without credentials.
	base      *rest.Config
	namespace string
	// pageNow is the pages' clock (--now in tests); sessions age by the real one.
	pageNow func() time.Time
	now     func() time.Time
	ctx     context.Context
	// maxSessions bounds the callers served at once (each has its own watches); idle ends a
	// caller's session, and its watches, after that long without a request.
	maxSessions int
	idle        time.Duration
	// recheck is how often a caller's token is reviewed again: a token revoked or expired ends
	// its session, and its watches, within that time (every call with it fails at once anyway).
	recheck time.Duration
	// reviews bounds the token reviews in flight: a flood of made-up tokens costs the API
	// server a few reviews at a time.
	reviews chan struct{}

	mu       sync.Mutex
	sessions map[sessionKey]*callerSession
	// cookies are the sign-ins of the page: a random cookie value for the token, kept on the
	// server so that the browser never holds the token itself.
	cookies map[string]cookieSignIn
}

type cookieSignIn struct {
	token string
	at    time.Time
}

// cookieLifetime is how long a sign-in lasts; the token's own expiry ends it earlier.
const cookieLifetime = 12 * time.Hour

// sessionKey is a caller's token (its digest) and the namespace the pages show them.
type sessionKey struct {
	token     [32]byte
	namespace string
}

type callerSession struct {
	user     string
	token    string
	handler  http.Handler
	cancel   context.CancelFunc
	lastUsed time.Time
	checked  time.Time
}

func newCallers(ctx context.Context, base *rest.Config, namespace string, now func() time.Time, maxSessions int, idle time.Duration) *callers {
	return &callers{base: base, namespace: namespace, pageNow: now, now: time.Now, ctx: ctx, maxSessions: maxSessions, idle: idle, recheck: time.Minute,
		reviews: make(chan struct{}, 4), sessions: map[sessionKey]*callerSession{}, cookies: map[string]cookieSignIn{}}
}

// tokenOf is the caller's token: the Authorization header's, else the sign-in's of the cookie.
func (c *callers) tokenOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		token, _ := strings.CutPrefix(h, "Bearer ")
		return strings.TrimSpace(token)
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.cookies[ck.Value]
	if !ok || c.now().Sub(s.at) > cookieLifetime {
		delete(c.cookies, ck.Value)
		return ""
	}
	return s.token
}

// errNotAuthenticated is a token the API server does not accept, or that names no one.
var errNotAuthenticated = errors.New("the API server does not accept this token")

// review asks the API server who the token's holder is, with the token itself.
func (c *callers) review(ctx context.Context, token string) (string, error) {
	select {
	case c.reviews <- struct{}{}:
		defer func() { <-c.reviews }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	user, err := selfSubjectReview(ctx, c.configFor(token))
	switch {
	case apierrors.IsUnauthorized(err):
		return "", errNotAuthenticated
	case err != nil:
		return "", err
	case user == "" || user == "system:anonymous":
		// An API server that lets anonymous requests in names them: they are no one here.
		return "", errNotAuthenticated
	}
	return user, nil
}

func (c *callers) configFor(token string) *rest.Config {
	cfg := rest.CopyConfig(c.base)
	cfg.BearerToken, cfg.BearerTokenFile = token, ""
	return cfg
}

// session returns the caller's dashboard of namespace ("" for the plugin's own -n or -A),
// starting it on the first request with a token and checking the token again every recheck.
func (c *callers) session(ctx context.Context, token, namespace string) (*callerSession, error) {
	if namespace == "" {
		namespace = c.namespace
	}
	key := sessionKey{token: sha256.Sum256([]byte(token)), namespace: namespace}
	now := c.now()
	c.mu.Lock()
	s, ok := c.sessions[key]
	if ok && now.Sub(s.checked) < c.recheck {
		s.lastUsed = now
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()

	user, err := c.review(ctx, token)
	if err != nil {
		if errors.Is(err, errNotAuthenticated) {
			c.end(key)
		}
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[key]; ok {
		s.checked, s.lastUsed = now, now
		return s, nil
	}
	s, err = c.start(token, user, namespace, now)
	if err != nil {
		return nil, err
	}
	c.evict(now)
	c.sessions[key] = s
	return s, nil
}

// start makes the dashboard of a caller, acting with their token.
func (c *callers) start(token, user, namespace string, now time.Time) (*callerSession, error) {
	cfg := c.configFor(token)
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: gateScheme()})
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	d := &dashboard{client: cl, config: cfg, dynamic: dyn, namespace: namespace, now: c.pageNow, serveCtx: ctx}
	d.flowCache = newFlowCache(dyn, namespace)
	d.access = newAccessCache(d.accessReview)
	mux := http.NewServeMux()
	d.routes(mux)
	return &callerSession{user: user, token: token, handler: mux, cancel: cancel, lastUsed: now, checked: now}, nil
}

// evict ends the sessions idle for longer than idle and, when the sessions are still at their
// bound, the least recently used one. Called with mu held.
func (c *callers) evict(now time.Time) {
	var oldest sessionKey
	var oldestAt time.Time
	for key, s := range c.sessions {
		if now.Sub(s.lastUsed) > c.idle {
			s.cancel()
			delete(c.sessions, key)
			continue
		}
		if oldestAt.IsZero() || s.lastUsed.Before(oldestAt) {
			oldest, oldestAt = key, s.lastUsed
		}
	}
	if len(c.sessions) >= c.maxSessions && !oldestAt.IsZero() {
		c.sessions[oldest].cancel()
		delete(c.sessions, oldest)
	}
	for v, s := range c.cookies {
		if now.Sub(s.at) > cookieLifetime {
			delete(c.cookies, v)
		}
	}
}

func (c *callers) end(key sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[key]; ok {
		s.cancel()
		delete(c.sessions, key)
	}
}

// handler serves the page's files to anyone, the sign-in, and the API to callers with a token
// the API server accepts. The pages of a namespace are under /ns/<namespace>/: their API calls,
// relative, go to /ns/<namespace>/api/, and read that namespace, which a tenant whose rights end
// at their namespace can list.
func (c *callers) handler() http.Handler {
	mux := http.NewServeMux()
	static := staticFiles()
	mux.Handle("GET /", static)
	mux.HandleFunc("POST /api/signin", c.signIn)
	mux.HandleFunc("POST /api/signout", c.signOut)
	mux.HandleFunc("GET /api/", c.api(""))
	mux.HandleFunc("POST /api/", c.api(""))
	inNamespace := func(w http.ResponseWriter, r *http.Request) {
		ns, rest := r.PathValue("namespace"), r.PathValue("rest")
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			http.Error(w, "invalid namespace: "+strings.Join(errs, "; "), http.StatusNotFound)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = "/"+rest, ""
		switch {
		case rest == "api/signin" || rest == "api/signout":
			mux.ServeHTTP(w, r2)
		case strings.HasPrefix(rest, "api/"):
			c.api(ns)(w, r2)
		case r.Method == http.MethodGet:
			static.ServeHTTP(w, r2)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	}
	mux.HandleFunc("GET /ns/{namespace}/{rest...}", inNamespace)
	mux.HandleFunc("POST /ns/{namespace}/{rest...}", inNamespace)
	return securityHeaders(mux)
}

// api serves the API of namespace to the caller of the request.
func (c *callers) api(namespace string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := c.tokenOf(r)
		if token == "" {
			http.Error(w, "sign in: no Kubernetes token in the request", http.StatusUnauthorized)
			return
		}
		s, err := c.session(r.Context(), token, namespace)
		switch {
		case errors.Is(err, errNotAuthenticated):
			http.Error(w, "sign in: "+err.Error(), http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "cannot ask the API server who you are: "+err.Error(), http.StatusBadGateway)
			return
		}
		s.handler.ServeHTTP(w, r)
	}
}

// signIn takes a token pasted in the sign-in page, keeps it on the server, and gives the
// browser a random cookie for it: HttpOnly (no script reads it), SameSite=Strict (no other
// site's page sends it).
func (c *callers) signIn(w http.ResponseWriter, r *http.Request) {
	if !fromThePage(w, r) {
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxTokenSize)).Decode(&body); err != nil {
		http.Error(w, "invalid request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	token := strings.TrimSpace(body.Token)
	if token == "" {
		http.Error(w, "paste a Kubernetes token", http.StatusBadRequest)
		return
	}
	s, err := c.session(r.Context(), token, "")
	switch {
	case errors.Is(err, errNotAuthenticated):
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	case err != nil:
		http.Error(w, "cannot ask the API server who you are: "+err.Error(), http.StatusBadGateway)
		return
	}
	value := make([]byte, 32)
	_, _ = rand.Read(value)
	id := base64.RawURLEncoding.EncodeToString(value)
	c.mu.Lock()
	c.keepSignIn(id, token)
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
		MaxAge: int(cookieLifetime.Seconds())})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"user": s.user})
}

// maxSignIns bounds the sign-ins kept: past it, the oldest is forgotten (its browser signs in
// again).
const maxSignIns = 4096

// keepSignIn remembers a sign-in. Called with mu held.
func (c *callers) keepSignIn(id, token string) {
	if len(c.cookies) >= maxSignIns {
		var oldest string
		var at time.Time
		for v, s := range c.cookies {
			if at.IsZero() || s.at.Before(at) {
				oldest, at = v, s.at
			}
		}
		delete(c.cookies, oldest)
	}
	c.cookies[id] = cookieSignIn{token: token, at: c.now()}
}

func (c *callers) signOut(w http.ResponseWriter, r *http.Request) {
	if !fromThePage(w, r) {
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.mu.Lock()
		delete(c.cookies, ck.Value)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeMessage(w, "signed out")
}
