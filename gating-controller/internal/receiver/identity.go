package receiver

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WhoAmI asks the API server the username of cfg (SelfSubjectReview), the name the receiver's
// requests are made in: the gate-requested-by admission policy accepts a request only in the
// name of the user who writes it, and for the receiver that is the controller's account
// (system:serviceaccount:<namespace>:<name> in a cluster).
func WhoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the controller is (SelfSubjectReview): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", fmt.Errorf("the API server returned no username for the controller")
	}
	return review.Status.UserInfo.Username, nil
}
