package gatereceiver

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// refusedReplay remembers an authenticated request by key and answers it when it is a replay
// (409: a captured request sent again, to this replica or another) or when the window is full
// (429); it says whether it answered.
func (h *handler) refusedReplay(ctx context.Context, w http.ResponseWriter, log logr.Logger, key [32]byte, now time.Time) bool {
	replay, full, err := h.checks.Seen(ctx, key, now)
	switch {
	case err != nil:
		log.Error(err, "recording the request")
		webhook.Reply(w, http.StatusServiceUnavailable, "could not record the request: send it again later")
		return true
	case replay:
		log.Info("request refused: replay")
		webhook.Reply(w, http.StatusConflict, "this request was already received: send a new timestamp")
		return true
	case full:
		webhook.Reply(w, http.StatusTooManyRequests, "too many requests in the replay window")
		return true
	}
	return false
}
