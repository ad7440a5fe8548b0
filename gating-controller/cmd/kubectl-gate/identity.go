package main

import (
	"context"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/sluice-gitops/sluice/gating-controller/internal/response"
)

// whoAmI names the caller for the requestedBy annotation. The API server is asked first
// (SelfSubjectReview) because only it knows the authenticated user: a kubeconfig entry is just a
// local label, and --as changes who the request is made as. When that API is unavailable
// (older clusters, restrictive RBAC) the kubeconfig is the best remaining guess, and stderr says so.
func whoAmI(ctx context.Context, cfg *rest.Config, flags *genericclioptions.ConfigFlags, stderr io.Writer) string {
	name, err := selfSubjectReview(ctx, cfg)
	if err == nil && name != "" {
		return name
	}
	if err == nil {
		err = fmt.Errorf("the API server returned no username")
	}
	guess := kubeconfigUser(flags)
	fmt.Fprintf(stderr, "warning: could not ask the API server who you are (%v); recording requestedBy as %q\n", err, guess)
	return guess
}

func selfSubjectReview(ctx context.Context, cfg *rest.Config) (string, error) {
	who, err := response.UserInfo(ctx, cfg)
	return who.Username, err
}

// kubeconfigUser is the fallback identity: --as, else --user, else the user of the selected
// context, else "unknown".
func kubeconfigUser(flags *genericclioptions.ConfigFlags) string {
	if flags.Impersonate != nil && *flags.Impersonate != "" {
		return *flags.Impersonate
	}
	if flags.AuthInfoName != nil && *flags.AuthInfoName != "" {
		return *flags.AuthInfoName
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "unknown"
	}
	contextName := raw.CurrentContext
	if flags.Context != nil && *flags.Context != "" {
		contextName = *flags.Context
	}
	if kctx, ok := raw.Contexts[contextName]; ok && kctx.AuthInfo != "" {
		return kctx.AuthInfo
	}
	return "unknown"
}
