package receiver

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// notFound is the one answer for an unknown gate, a gate without spec.receiver and a gate whose
// Secret is missing: a caller cannot tell them apart, so gate names do not leak.
const notFound = "no webhook receiver for this gate"

// handler serves POST /gates/<namespace>/<name>/open|close.
type handler struct {
	s        *Server
	limits   Limits
	seen     *seenRequests
	limiters *gateLimiters
	now      func() time.Time
}

func newHandler(s *Server) http.Handler {
	limits := s.Limits.withDefaults()
	h := &handler{
		s: s, limits: limits, now: time.Now,
		seen:     newSeenRequests(limits.Window, limits.MaxRemembered),
		limiters: newGateLimiters(limits.RateInterval, limits.Burst),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /gates/{namespace}/{name}/{action}", h.serveRequest)
	return mux
}

// serveRequest checks, in this order, what costs least and reveals least first: the gate and its
// receiver (404), the gate's rate (429), the token (401), the body (400), its timestamp (401),
// a replay (409); then writes the request annotations (202).
func (h *handler) serveRequest(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	log := ctrl.Log.WithName("receiver").WithValues("gate", key.String(), "remote", r.RemoteAddr)
	act, ok := actions[r.PathValue("action")]
	if !ok {
		reply(w, http.StatusNotFound, "the action must be open or close")
		return
	}

	gate := &gatingv1.Gate{}
	if err := h.s.Client.Get(ctx, key, gate); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "reading the gate")
			reply(w, http.StatusInternalServerError, "could not read the gate")
			return
		}
		reply(w, http.StatusNotFound, notFound)
		return
	}
	if gate.Spec.Receiver == nil {
		reply(w, http.StatusNotFound, notFound)
		return
	}

	now := h.now()
	if !h.limiters.allow(key, now) {
		w.Header().Set("Retry-After", strconv.Itoa(int(h.limits.RateInterval.Seconds()+0.5)))
		reply(w, http.StatusTooManyRequests, "too many requests for this gate")
		log.Info("request refused: rate limit")
		return
	}

	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.limits.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			reply(w, http.StatusRequestEntityTooLarge, "the body is too large")
			return
		}
		reply(w, http.StatusBadRequest, "could not read the body")
		return
	}

	secretName := gate.Spec.Receiver.SecretRef.Name
	secret := &corev1.Secret{}
	if err := h.s.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: secretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("request refused: the Secret of spec.receiver.secretRef does not exist", "secret", secretName)
			reply(w, http.StatusNotFound, notFound)
			return
		}
		log.Error(err, "reading the Secret of spec.receiver.secretRef", "secret", secretName)
		reply(w, http.StatusInternalServerError, "could not read the receiver's Secret")
		return
	}
	token := secret.Data[gatingv1.ReceiverTokenKey]
	if len(token) == 0 {
		log.Info("request refused: the Secret of spec.receiver.secretRef has no token", "secret", secretName)
		reply(w, http.StatusNotFound, notFound)
		return
	}
	if !authenticated(r, raw, token) {
		log.Info("request refused: bad token or signature")
		reply(w, http.StatusUnauthorized, "bad token or signature")
		return
	}

	req, err := parseBody(raw)
	if err != nil {
		reply(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkTimestamp(req.Timestamp, now, h.limits.Window); err != nil {
		log.Info("request refused: stale timestamp", "timestamp", req.Timestamp)
		reply(w, http.StatusUnauthorized, err.Error())
		return
	}
	// The signature covers the body only, not the path: a request is known by its Secret and its
	// body, so a captured body is refused on every path and gate of that Secret.
	seenKey := sha256.Sum256([]byte(key.Namespace + "/" + secretName + "\n" + string(raw)))
	replay, full := h.seen.remember(seenKey, now)
	switch {
	case replay:
		log.Info("request refused: replay")
		reply(w, http.StatusConflict, "this request was already received: send a new timestamp")
		return
	case full:
		reply(w, http.StatusTooManyRequests, "too many requests in the replay window")
		return
	}

	reason := receiverReason(secretName, req.Reason)
	if err := writeRequest(ctx, h.s.Client, key, act.state, now, h.s.RequestedBy, reason, req.For); err != nil {
		h.seen.forget(seenKey)
		log.Error(err, "writing the request annotations")
		reply(w, http.StatusInternalServerError, "could not write the request on the gate")
		return
	}
	if h.s.EventRecorder != nil {
		h.s.EventRecorder.Eventf(gate, corev1.EventTypeNormal, "ReceiverRequest", "%s requested through the webhook receiver: %s", act.verb, reason)
	}
	log.Info(act.verb+" requested", "reason", reason, "for", req.For)
	reply(w, http.StatusAccepted, act.verb+" requested")
}

// reply writes {"message": msg} with the status code.
func reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
