package gatereceiver

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// replyAPIError answers a call made with the caller's token that the API server refused, with the
// API server's own message where it is about the caller's request (who they are, what they may
// do, what is wrong with the GateApproval): it names the caller, never their token. Anything else
// is the receiver's failure, logged and answered 500 without detail.
func replyAPIError(w http.ResponseWriter, log logr.Logger, err error, doing string) {
	var status apierrors.APIStatus
	message := ""
	if errors.As(err, &status) {
		message = status.Status().Message
	}
	switch {
	case apierrors.IsUnauthorized(err):
		log.Info("response refused: the API server did not accept the token")
		webhook.Reply(w, http.StatusUnauthorized, tokenRefused)
	case apierrors.IsForbidden(err):
		log.Info("response refused by the API server", "message", message)
		webhook.Reply(w, http.StatusForbidden, message)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		log.Info("response refused by the API server", "message", message)
		webhook.Reply(w, http.StatusBadRequest, message)
	case apierrors.IsTooManyRequests(err):
		if seconds, ok := apierrors.SuggestsClientDelay(err); ok {
			w.Header().Set("Retry-After", strconv.Itoa(seconds))
		}
		log.Info("response refused: the API server is busy")
		webhook.Reply(w, http.StatusTooManyRequests, "the API server is busy: try again later")
	default:
		log.Error(err, "could not "+doing)
		webhook.Reply(w, http.StatusInternalServerError, "could not "+doing)
	}
}
