package response

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// UserInfo is the user of cfg as the API server authenticates it (a SelfSubjectReview,
// authentication.k8s.io/v1): only the API server knows it, a kubeconfig entry or a client's
// claim is just a label. Every authenticated user may ask (the system:basic-user ClusterRole).
func UserInfo(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return review.Status.UserInfo, nil
}
