// Package forge lists the branches, tags, open pull or merge requests and environments of a
// repository on a forge (Gitea, GitHub, GitLab) or any Git server (ls-remote), and turns them
// into the inputs of a ResourceSetInputProvider.
//
// A Lister only lists; what is exported is decided here, the same way for every forge: Select
// applies spec.filter (branch, tag and environment expressions, labels, semver, limit) and Freeze
// applies spec.skip.labels. Listing is bounded (MaxItems) so that a repository with a huge
// number of branches cannot hold the controller.
package forge
