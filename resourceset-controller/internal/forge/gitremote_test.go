package forge

import (
	"context"
	"net/url"
	"testing"

	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
	"github.com/sluice-gitops/sluice/shared/gitauth"
	"github.com/sluice-gitops/sluice/shared/testserver"
)

// ls-remote against the real Git server: branches and tags with their commits (an annotated
// tag's peeled commit), over HTTP with basic auth and over SSH with a key and known_hosts.
func TestGitRemoteListsBranchesAndTags(t *testing.T) {
	srv := testserver.NewGitServer(t, testserver.Options{Username: "u", Password: "p", SSH: true})
	repo := srv.NewRepo(t, "app")
	first := repo.Commit(t, "first", map[string]string{"a.txt": "1"})
	lightweight := repo.Tag(t, "v1.0.0", false)
	repo.Branch(t, "feat/x")
	second := repo.Commit(t, "second", map[string]string{"a.txt": "2"})
	annotated := repo.Tag(t, "v1.1.0", true)
	if lightweight != first || annotated != second {
		t.Fatal("tags do not point where expected")
	}

	httpURL := repo.HTTPURL()
	u, _ := url.Parse(httpURL)
	httpAuth, err := gitauth.AuthFromSecret(u, map[string][]byte{"username": []byte("u"), "password": []byte("p")}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sshURL := repo.SSHURL()
	su, _ := url.Parse(sshURL)
	sshAuth, err := gitauth.AuthFromSecret(su, map[string][]byte{
		"identity": srv.Identity().PrivateKeyPEM, "known_hosts": srv.KnownHosts(),
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	for name, l := range map[string]Lister{"http": NewGitRemote(httpURL, httpAuth), "ssh": NewGitRemote(sshURL, sshAuth)} {
		t.Run(name, func(t *testing.T) {
			branches, err := l.List(context.Background(), Branches)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, b := range branches {
				got[b.Branch] = b.SHA
				if b.ID != inputs.ID(b.Branch) {
					t.Errorf("branch %s has id %s", b.Branch, b.ID)
				}
			}
			if len(got) != 2 || got["feat/x"] != second || got[repo.CurrentBranch(t)] == "" {
				t.Fatalf("branches: %v", got)
			}
			tags, err := l.List(context.Background(), Tags)
			if err != nil {
				t.Fatal(err)
			}
			gotTags := map[string]string{}
			for _, tg := range tags {
				gotTags[tg.Tag] = tg.SHA
			}
			if len(gotTags) != 2 || gotTags["v1.0.0"] != first || gotTags["v1.1.0"] != second {
				t.Fatalf("tags (an annotated tag must give its commit): %v", gotTags)
			}
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		bad, _ := gitauth.AuthFromSecret(u, map[string][]byte{"username": []byte("u"), "password": []byte("nope")}, t.TempDir())
		_, err := NewGitRemote(httpURL, bad).List(context.Background(), Branches)
		if err == nil || !gitauth.IsAuthError(err) {
			t.Fatalf("got %v, want an authentication error", err)
		}
	})
}
