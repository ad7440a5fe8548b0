package receiver

import (
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// refusedReplay remembers an authenticated request by key and answers it when it is a replay
// (409: a captured request sent again) or when the window is full (429); it says whether it
// answered.
func (h *handler) refusedReplay(w http.ResponseWriter, log logr.Logger, key [32]byte, now time.Time) bool {
	replay, full := h.seen.Remember(key, now)
	switch {
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
