// Package testserver serves real Git repositories on loopback for tests: `git http-backend`
// behind net/http/httptest (plain HTTP or HTTPS, optional basic or bearer auth) and an SSH
// server built on golang.org/x/crypto/ssh that runs the real `git upload-pack` and
// `git receive-pack`. Repositories are bare repositories under the server's root, filled
// through a work tree with the real git CLI, so the controllers' Git clients are tested
// against the same programs that serve Git in production instead of a mock.
//
// A test starts one server and creates repositories on it:
//
//	srv := testserver.NewGitServer(t, testserver.Options{Username: "u", Password: "p", SSH: true})
//	repo := srv.NewRepo(t, "app")
//	sha := repo.Commit(t, "first", map[string]string{"deploy/cm.yaml": "..."})
//	// clone repo.HTTPURL() with u:p, or repo.SSHURL() with srv.Identity() and srv.KnownHosts()
//
// Everything stops and is removed through t.Cleanup. The git binary is required: RequireGit
// fails the test (it does not skip) when it is missing.
package testserver
