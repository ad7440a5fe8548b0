// Package git is the Git client of the GitRepository reconciler, on go-git: the remote revision
// of a reference without cloning (ls-remote), and a shallow checkout. Credentials come from the
// shared gitauth package.
package git
