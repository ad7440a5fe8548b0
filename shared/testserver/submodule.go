package testserver

import "testing"

// AddSubmodule adds the repository at url (relative ones, "../lib.git", name a sibling on the
// same server, as Git resolves them) as a submodule at path, at the tip of its default branch;
// it commits the .gitmodules entry and the gitlink, pushes and returns the commit's SHA. The
// submodule is cloned from the server's directory, so the server needs no credentials here.
func (r *Repo) AddSubmodule(t testing.TB, path, url string) string {
	t.Helper()
	// A relative URL resolves against origin, the bare repository's directory: a local clone.
	r.git(t, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", url, path)
	return r.Commit(t, "add submodule "+path, nil)
}

// UpdateSubmodule moves the submodule at path to the tip of its repository's default branch,
// commits the new gitlink, pushes and returns the commit's SHA.
func (r *Repo) UpdateSubmodule(t testing.TB, path string) string {
	t.Helper()
	r.git(t, "-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--remote", path)
	return r.Commit(t, "update submodule "+path, nil)
}
