package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-gitops/sluice/shared/pullrequest"
	"github.com/sluice-gitops/sluice/shared/secrets"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
	"github.com/sluice-gitops/sluice/manifest-generator/internal/update"
)

// ForgeTimeout bounds one request to a forge's API.
const ForgeTimeout = 30 * time.Second

// pullRequestBranch is the branch a proposed change is pushed to: spec.pullRequest.branch, or
// one derived from the generation and what the change is of, so that the next change of the
// same workload and container goes to the same branch and updates the same pull request.
func pullRequestBranch(obj *generatorv1.ManifestUpdate) string {
	if b := obj.Spec.PullRequest.Branch; b != "" {
		return b
	}
	prefix := "sluice/" + obj.Spec.GenerationRef.Name + "/"
	if len(obj.Spec.ContainerImages) > 0 {
		return prefix + "release"
	}
	what := "policies"
	if ci := obj.Spec.ContainerImage; ci != nil {
		what = ci.Container
	}
	w := strings.NewReplacer(":", "-", "/", "-").Replace(strings.ToLower(obj.Spec.Workload))
	return prefix + w + "-" + what
}

// propose opens the pull request of a pushed change, or updates the one open from its branch:
// a second change of the same workload never opens a duplicate.
func (r *ManifestUpdateReconciler) propose(ctx context.Context, obj *generatorv1.ManifestUpdate, t update.Target,
	message string) (*generatorv1.PullRequestStatus, error) {
	spec := obj.Spec.PullRequest
	token, err := r.forgeToken(ctx, obj, t)
	if err != nil {
		return nil, err
	}
	if r.ForgeClient == nil {
		return nil, errors.New("this controller opens no pull requests")
	}
	forge, err := pullrequest.New(pullrequest.Options{Provider: pullrequest.Provider(spec.Provider), RepoURL: t.URL, Token: token,
		HTTPClient: r.ForgeClient})
	if err != nil {
		return nil, err
	}
	title, body, _ := strings.Cut(strings.TrimSpace(message), "\n")
	if spec.Title != "" {
		title = spec.Title
	}
	body = strings.TrimSpace(body + fmt.Sprintf("\n\nProposed by ManifestUpdate %s/%s.", obj.Namespace, obj.Name))
	pr, _, err := forge.Ensure(ctx, pullrequest.Request{Head: t.Branch, Base: t.Base, Title: title, Body: body})
	if err != nil {
		return nil, fmt.Errorf("opening the pull request from '%s' into '%s': %w", t.Branch, t.Base, err)
	}
	return &generatorv1.PullRequestStatus{Number: pr.Number, URL: pr.URL, Branch: t.Branch, Base: t.Base}, nil
}

// forgeToken is the `token` of spec.pullRequest.secretRef, or the `password` of the
// GitRepository's Secret (the token a forge takes for pushes over HTTPS).
func (r *ManifestUpdateReconciler) forgeToken(ctx context.Context, obj *generatorv1.ManifestUpdate, t update.Target) (string, error) {
	name, key := t.SecretName, "password"
	if ref := obj.Spec.PullRequest.SecretRef; ref != nil {
		name, key = ref.Name, "token"
	}
	if name == "" {
		return "", fmt.Errorf("spec.pullRequest: set secretRef to a Secret whose 'token' may open pull requests")
	}
	data, err := secrets.Data(ctx, r.Client, obj.Namespace, name)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(data[key]))
	if token == "" {
		return "", fmt.Errorf("secret '%s/%s' has no '%s' to open pull requests with", obj.Namespace, name, key)
	}
	return token, nil
}
