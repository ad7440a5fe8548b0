package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// GiteaAdmin is the name of the site administrator NewGitea creates; AdminToken is its token.
const GiteaAdmin = "sluice-admin"

// giteaPassword is the password of every user of a test Gitea: tokens are made with it (Gitea
// creates tokens only for a user authenticated by password).
const giteaPassword = "sluice-test-password"

// Gitea is a real Gitea (bin/gitea, built by `make tools` from code.gitea.io/gitea) serving HTTP
// on loopback, with SQLite and every setting in a temporary directory. It is the forge of the
// tests that need pull requests, forge APIs and webhooks: tests drive it through its REST API
// (gitea_api.go), and clients clone and push over HTTP with a user's token as the password.
type Gitea struct {
	url        string
	adminToken string
	bin        string
	dir        string // the work directory: app.ini, database, repositories
	env        []string
}

// NewGitea starts Gitea with a fresh database and a site administrator (GiteaAdmin, whose token
// AdminToken returns). It fails the test, naming `make tools`, when bin/gitea is missing. The
// process is killed and its directory removed by t.Cleanup.
//
// Webhooks may target loopback (ALLOWED_HOST_LIST=loopback) and HTTPS listeners with test
// certificates (SKIP_TLS_VERIFY); deliveries time out after 5 s.
func NewGitea(t testing.TB) *Gitea {
	t.Helper()
	RequireGit(t) // Gitea runs git for every repository operation
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err.Error())
	}
	binDir := filepath.Join(root, "bin")
	if err := testenv.CheckBinaries(binDir, "gitea"); err != nil {
		t.Fatal(err.Error())
	}
	// Without the bindata tag Gitea reads its templates and options from disk: `make tools`
	// copies them from its module beside the binary.
	staticRoot := filepath.Join(binDir, "gitea-data")
	if err := testenv.CheckBinaries(staticRoot, "templates", "options"); err != nil {
		t.Fatalf("%v: remove bin/gitea and run `make tools`", err)
	}
	g := &Gitea{bin: filepath.Join(binDir, "gitea"), dir: t.TempDir()}
	// git's user and system settings are ignored as for every server here (GitEnv), but not
	// with GitEnv's GIT_CONFIG_GLOBAL=/dev/null: Gitea writes its own git settings with `git
	// config --global`, and git replaces that file by renaming a lock file over it, which would
	// turn /dev/null into a regular file for the whole machine. Gitea gets a file of its own.
	for _, kv := range GitEnv() {
		if !strings.HasPrefix(kv, "GIT_CONFIG_GLOBAL=") {
			g.env = append(g.env, kv)
		}
	}
	g.env = append(g.env,
		"GIT_CONFIG_GLOBAL="+filepath.Join(g.dir, "gitconfig"),
		"GITEA_WORK_DIR="+g.dir,
		"GITEA_CUSTOM="+filepath.Join(g.dir, "custom"),
		"HOME="+g.dir,
	)
	logf := cleanupSafeLogf(t)

	// The port is chosen free, then given to Gitea, which listens on it once it has started:
	// another process may take it in between. Gitea then logs that it cannot listen, and keeps
	// running: it is stopped and started again on another port.
	for attempt := 1; ; attempt++ {
		err := g.start(t, staticRoot, logf)
		if err == nil {
			break
		}
		if attempt == 3 || !errors.Is(err, errPortInUse) {
			t.Fatalf("starting %s: %v", g.bin, err)
		}
	}

	// The administrator is created with Gitea's CLI (the API needs a user to begin with), and
	// its token through the API with its password.
	g.cli(t, "admin", "user", "create", "--username", GiteaAdmin, "--password", giteaPassword,
		"--email", GiteaAdmin+"@example.com", "--admin", "--must-change-password=false")
	g.adminToken = g.token(t, GiteaAdmin)
	return g
}

var errPortInUse = errors.New("its port is in use")

// start writes app.ini for a free loopback port, starts `gitea web` and waits until its API
// answers. When Gitea cannot listen on the port, the error is errPortInUse.
func (g *Gitea) start(t testing.TB, staticRoot string, logf func(string, ...any)) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	g.url = "http://127.0.0.1:" + strconv.Itoa(port)

	conf := g.config()
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(conf, []byte(giteaINI(g.dir, staticRoot, port)), 0o600); err != nil {
		return err
	}

	cmd := exec.Command(g.bin, "web", "--config", conf)
	cmd.Dir = g.dir
	cmd.Env = g.env
	// Its log goes to the test's; a failure to listen is noted.
	var inUse atomic.Bool
	log := logWriter(func(format string, args ...any) {
		if strings.Contains(fmt.Sprintf(format, args...), "address already in use") {
			inUse.Store(true)
		}
		logf(format, args...)
	})
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: the git processes it starts are killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}

	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if inUse.Load() {
			stop()
			return fmt.Errorf("gitea on %s: %w", g.url, errPortInUse)
		}
		resp, err := client.Get(g.url + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return nil
			}
		}
		select {
		case err := <-exited:
			exited <- err
			stop()
			return fmt.Errorf("gitea exited before answering on %s: %v (its log is above)", g.url, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("gitea did not answer on %s within 30s", g.url)
		}
	}
}

func (g *Gitea) config() string { return filepath.Join(g.dir, "custom", "conf", "app.ini") }

// giteaINI is the configuration of a test Gitea: installed, offline, loopback only, SQLite, and
// without what tests do not use (SSH, LFS, mail, cron, actions, packages, indexers). The secrets
// are fixed: Gitea would otherwise generate them and write them into app.ini.
func giteaINI(dir, staticRoot string, port int) string {
	return fmt.Sprintf(`APP_NAME = Sluice test forge
RUN_MODE = prod
WORK_PATH = %[1]s
; Gitea refuses to run as root (as tests do in CI) without it.
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://127.0.0.1:%[3]d/
STATIC_ROOT_PATH = %[2]s
APP_DATA_PATH = %[1]s/data
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[1]s/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = sluice-test-forge-secret-key
INTERNAL_TOKEN = sluice-test-forge-internal-token-0123456789abcdef
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 8

[oauth2]
ENABLED = false
JWT_SECRET = c2x1aWNlLWZvcmdlLXRlc3RzLWp3dC1zZWNyZXQtMzI

[service]
DISABLE_REGISTRATION = true
DEFAULT_KEEP_EMAIL_PRIVATE = false

[webhook]
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 5
SKIP_TLS_VERIFY = true

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[mailer]
ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
`, dir, staticRoot, port)
}

// cli runs a command of Gitea's CLI against the running server's configuration and returns its
// standard output.
func (g *Gitea) cli(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(g.bin, append(args, "--config", g.config())...)
	cmd.Dir = g.dir
	cmd.Env = g.env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gitea %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.String()
}

// URL is the server's base URL, http://127.0.0.1:<port> (no trailing slash).
func (g *Gitea) URL() string { return g.url }

// AdminToken is a token of the site administrator GiteaAdmin with every scope.
func (g *Gitea) AdminToken() string { return g.adminToken }

// CreateUser creates a user (not an administrator) and returns a token of it with every scope.
func (g *Gitea) CreateUser(t testing.TB, name string) (token string) {
	t.Helper()
	g.API(t, g.adminToken, http.MethodPost, "/admin/users", map[string]any{
		"username":             name,
		"email":                name + "@example.com",
		"password":             giteaPassword,
		"must_change_password": false,
	}, nil)
	return g.token(t, name)
}

// token creates a token with every scope for a user, authenticated by its password.
func (g *Gitea) token(t testing.TB, user string) string {
	t.Helper()
	var tok struct {
		Token string `json:"sha1"`
	}
	status, body, err := g.do(http.MethodPost, "/users/"+user+"/tokens",
		map[string]any{"name": "sluice-test", "scopes": []string{"all"}},
		func(r *http.Request) { r.SetBasicAuth(user, giteaPassword) })
	if err == nil && status/100 != 2 {
		err = fmt.Errorf("%d %s", status, body)
	}
	if err == nil {
		err = json.Unmarshal(body, &tok)
	}
	if err != nil || tok.Token == "" {
		t.Fatalf("gitea: creating a token for %s: %v %s", user, err, body)
	}
	return tok.Token
}

// CreateOrg creates a public organization owned by the administrator.
func (g *Gitea) CreateOrg(t testing.TB, name string) {
	t.Helper()
	g.API(t, g.adminToken, http.MethodPost, "/orgs", map[string]any{"username": name, "visibility": "public"}, nil)
}

// CreateRepo creates a public repository of owner (a user or an organization) initialized with
// a README on its main branch. Its methods act as the administrator; As acts as another user.
func (g *Gitea) CreateRepo(t testing.TB, owner, name string) *GiteaRepo {
	t.Helper()
	path := "/admin/users/" + owner + "/repos" // on behalf of users and organizations alike
	if owner == GiteaAdmin {
		path = "/user/repos"
	}
	g.API(t, g.adminToken, http.MethodPost, path, map[string]any{
		"name":           name,
		"auto_init":      true,
		"default_branch": "main",
		"readme":         "Default",
	}, nil)
	return &GiteaRepo{g: g, Owner: owner, Name: name, token: g.adminToken}
}

// API sends a request to Gitea's REST API (path below /api/v1) with token, body encoded as JSON
// when not nil, and decodes the answer into out when not nil. A status other than 2xx fails the
// test with the answer. Tests reach what the helpers do not cover through it.
func (g *Gitea) API(t testing.TB, token, method, path string, body, out any) {
	t.Helper()
	status, answer, err := g.do(method, path, body, bearer(token))
	if err != nil {
		t.Fatalf("gitea: %s %s: %v", method, path, err)
	}
	if status/100 != 2 {
		t.Fatalf("gitea: %s %s: %d %s", method, path, status, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatalf("gitea: %s %s: decoding %s: %v", method, path, answer, err)
		}
	}
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "token "+token) }
}

// do sends one API request and returns the status and the body of the answer.
func (g *Gitea) do(method, path string, body any, auth func(*http.Request)) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		reader = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, g.url+"/api/v1"+path, reader)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	auth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}
