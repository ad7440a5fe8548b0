// Package testserver runs the real servers the controllers are tested against, on loopback: Git
// (below), a Helm HTTP repository with charts packaged by Helm's own code and an index generated
// by Helm's repo package (NewHelmRepository), and an OCI registry (go-containerregistry's
// in-process registry, NewRegistry) that charts are pushed to with Helm's registry client.
//
// Git repositories are served by `git http-backend`
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
//
// For pull requests, forge APIs and webhooks, NewGitea runs a real Gitea (bin/gitea, built by
// `make tools`; the test fails naming it when it is missing) on loopback with SQLite, and drives
// it through its REST API (gitea.go, gitea_api.go):
//
//	forge := testserver.NewGitea(t)
//	alice := forge.CreateUser(t, "alice") // her token
//	repo := forge.CreateRepo(t, testserver.GiteaAdmin, "app") // a README on main
//	repo.AddWebhook(t, listenerURL, "secret", "push", "pull_request")
//	repo.CreateBranch(t, "feature", "main")
//	repo.Commit(t, "feature", "change", map[string]string{"deploy/cm.yaml": "..."})
//	repo.AddCollaborator(t, "alice", "write")
//	pr := repo.As(alice).OpenPullRequest(t, "feature", "main", "Change") // alice's
//	repo.MergePullRequest(t, pr)
package testserver
