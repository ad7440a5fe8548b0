package gatereceiver

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/sluice-gitops/sluice/gating-controller/internal/response"
)

// WhoAmI asks the API server the username of cfg (SelfSubjectReview), the name the receiver's
// requests are made in: the gate-requested-by admission policy accepts a request only in the
// name of the user who writes it, and for the receiver that is the controller's account
// (system:serviceaccount:<namespace>:<name> in a cluster).
func WhoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	who, err := response.UserInfo(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("asking the API server who the controller is (SelfSubjectReview): %w", err)
	}
	if who.Username == "" {
		return "", fmt.Errorf("the API server returned no username for the controller")
	}
	return who.Username, nil
}
