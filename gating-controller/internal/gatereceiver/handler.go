package gatereceiver

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// notFound is the one answer for an unknown gate, a gate without spec.receiver and a gate whose
// Secret is missing: a caller cannot tell them apart, so gate names do not leak.
const notFound = "no webhook receiver for this gate"

// handler serves POST /gates/<namespace>/<name>/open|close, and approve|reject (respond.go).
type handler struct {
	s      *Server
	limits Limits
	checks *webhook.Checks
	// responses are the gates' budgets of approvals and rejections, apart from the requests', so
	// that the holders of a gate's token and its approvers cannot keep each other out.
	responses *webhook.Limiters
	callers   *webhook.KnownCallers
	conn      *callerConn
}

func newHandler(s *Server) http.Handler {
	limits := s.Limits.withDefaults()
	h := &handler{
		s: s, limits: limits,
		checks:    webhook.NewChecks(limits.bounds(), s.Claims),
		responses: webhook.NewLimiters(limits.RateInterval, limits.Burst),
		callers:   webhook.NewKnownCallers(limits.MaxRemembered),
		conn:      &callerConn{base: s.APIServer},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(requestPattern, h.serveRequest)
	mux.HandleFunc(approvePattern, h.respondWith(gatingv1.DecisionApprove))
	mux.HandleFunc(rejectPattern, h.respondWith(gatingv1.DecisionReject))
	return mux
}

// serveRequest checks, in this order, what costs least and reveals least first: the gate and its
// receiver (404), the body's size (413), the token (401; 429 for a source address that has spent
// its failed attempts), the gate's rate (429), the body (400), its timestamp (401), a replay
// (409); then writes the request annotations (202). The gate's rate is spent by authenticated
// requests only, so that nobody without the token can keep the gate's callers out.
func (h *handler) serveRequest(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	log := ctrl.Log.WithName("receiver").WithValues("remote", r.RemoteAddr)
	key, act, err := parseRequestPath(r)
	if err != nil {
		webhook.Reply(w, http.StatusNotFound, err.Error())
		return
	}
	log = log.WithValues("gate", key.String())

	gate := &gatingv1.Gate{}
	if err := h.s.Client.Get(ctx, key, gate); err != nil {
		if !apierrors.IsNotFound(err) {
			log.Error(err, "reading the gate")
			webhook.Reply(w, http.StatusInternalServerError, "could not read the gate")
			return
		}
		webhook.Reply(w, http.StatusNotFound, notFound)
		return
	}
	if gate.Spec.Receiver == nil {
		webhook.Reply(w, http.StatusNotFound, notFound)
		return
	}

	raw, ok := h.checks.ReadBody(w, r)
	if !ok {
		return
	}

	now := time.Now()
	secretKey := types.NamespacedName{Namespace: key.Namespace, Name: gate.Spec.Receiver.SecretRef.Name}
	if !h.authenticate(ctx, w, r, log, key, secretKey, raw, now) {
		return
	}
	secretName := secretKey.Name

	req, err := parseBody(raw, h.limits.MaxDuration)
	if err != nil {
		webhook.Reply(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkTimestamp(req.Timestamp, now, h.limits.Window); err != nil {
		log.Info("request refused: stale timestamp", "timestamp", req.Timestamp)
		webhook.Reply(w, http.StatusUnauthorized, err.Error())
		return
	}
	// The signature covers the body only, not the path: a request is known by its Secret and its
	// body, so a captured body is refused on every path and gate of that Secret.
	seenKey := sha256.Sum256([]byte(key.Namespace + "/" + secretName + "\n" + string(raw)))
	if h.refusedReplay(ctx, w, log, seenKey, now) {
		return
	}

	reason := receiverReason(secretName, req.Reason)
	if err := writeRequest(ctx, h.s.Client, key, act.state, now, h.s.RequestedBy, reason, req.For); err != nil {
		if err := h.checks.Forget(ctx, seenKey); err != nil {
			log.Error(err, "forgetting a request that was not written")
		}
		log.Error(err, "writing the request annotations")
		webhook.Reply(w, http.StatusInternalServerError, "could not write the request on the gate")
		return
	}
	if h.s.EventRecorder != nil {
		h.s.EventRecorder.Eventf(gate, corev1.EventTypeNormal, "ReceiverRequest", "%s requested through the webhook receiver: %s", act.verb, reason)
	}
	log.Info(act.verb+" requested", "reason", reason, "for", req.For)
	webhook.Reply(w, http.StatusAccepted, act.verb+" requested")
}

// authenticate checks the request's token against the gate receiver's Secret, and spends the
// gate's budget: 429 for a gate over its rate or a source that spent its failed attempts, 404
// for a missing Secret or token (told apart from an unknown gate by nothing), 401 for a bad
// token or signature. It answers the request and returns false when it goes no further.
func (h *handler) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request, log logr.Logger,
	key, secretKey types.NamespacedName, raw []byte, now time.Time) bool {
	// A request that carries the token the receiver last read is a caller's: it spends the
	// gate's budget, and is checked against the Secret whatever its source did before. Any
	// other request is checked only while its source has failed attempts left.
	caller, read := h.checks.KnownCaller(secretKey, func(token []byte) bool { return authenticated(r, raw, token) })
	switch {
	case caller && !h.checks.AllowRate(w, key, now, tooManyForGate):
		log.Info("request refused: rate limit")
		return false
	case !caller && read && h.checks.RefusedSource(w, r, now):
		log.Info("request refused: too many failed attempts from this address")
		return false
	}

	secretName := secretKey.Name
	token, err := h.checks.Token(ctx, h.s.Client, secretKey, gatingv1.ReceiverTokenKey)
	switch {
	case apierrors.IsNotFound(err):
		h.checks.Fail(r, now)
		log.Info("request refused: the Secret of spec.receiver.secretRef does not exist", "secret", secretName)
		webhook.Reply(w, http.StatusNotFound, notFound)
		return false
	case err != nil:
		log.Error(err, "reading the Secret of spec.receiver.secretRef", "secret", secretName)
		webhook.Reply(w, http.StatusInternalServerError, "could not read the receiver's Secret")
		return false
	case len(token) == 0:
		h.checks.Fail(r, now)
		log.Info("request refused: the Secret of spec.receiver.secretRef has no token", "secret", secretName)
		webhook.Reply(w, http.StatusNotFound, notFound)
		return false
	case !authenticated(r, raw, token):
		h.checks.Fail(r, now)
		log.Info("request refused: bad token or signature")
		webhook.Reply(w, http.StatusUnauthorized, "bad token or signature")
		return false
	case !caller && !h.checks.AllowRate(w, key, now, tooManyForGate):
		log.Info("request refused: rate limit")
		return false
	}
	return true
}

// tooManyForGate answers a request over the gate's rate.
const tooManyForGate = "too many requests for this gate"

// signatureHeader carries the HMAC-SHA256 of the body, keyed with the token, as Flux's
// generic-hmac receivers take it: `X-Signature: sha256=<hex>`.
const signatureHeader = "X-Signature"

// authenticated tells whether the request carries the token, either as a bearer token or as the
// key of the body's signature; both comparisons take constant time (webhook.EqualToken,
// webhook.ValidPrefixedHMAC).
func authenticated(r *http.Request, body, token []byte) bool {
	if len(token) == 0 {
		return false
	}
	if sig := r.Header.Get(signatureHeader); sig != "" {
		return webhook.ValidPrefixedHMAC(sig, body, token, "sha256")
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" {
		return false
	}
	return webhook.EqualToken([]byte(strings.TrimSpace(bearer)), token)
}
