// Package git is the Git client of the GitRepository reconciler, on go-git: credentials from a
// Secret, the remote revision of a reference without cloning (ls-remote), and a shallow checkout.
package git
