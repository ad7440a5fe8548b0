// Package pullrequest opens or updates the pull request (a merge request on GitLab) that proposes
// a branch a controller pushed, on Gitea (and Forgejo), GitHub (and GitHub Enterprise Server) or
// GitLab (gitlab.com and self-managed).
//
// A controller that pushes its changes to a branch of its own, named deterministically, calls
// Forge.Ensure after every push: the first call opens a pull request from that branch into the
// base branch, the next ones find that pull request (open, from the same repository's branch, into
// the same base) and update its title and body. The forges refuse a second open pull request
// between the same two branches, so two controllers racing to open one get one pull request and
// an error for the other, which its next reconcile turns into an update. Forge.Get follows a pull
// request afterwards, telling a merged one from one closed without merging.
//
// Every request goes through the http.Client the caller gives (Options.HTTPClient), which carries
// the controller's address policy and timeout. On top of it, answers are read up to 1 MiB, and a
// redirect is followed only to the same host (an API token must not follow a redirect elsewhere).
// Errors say what failed and what to change; they never contain the token nor a forge's answer
// beyond a short "message" it gives.
package pullrequest
