package fluxreceiver

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxreceiver/routing"
	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

const (
	// logName is the name of the receiver's logger.
	logName = "flux-receiver"
	// hookPattern is the receiver's one route (net/http's ServeMux pattern): other methods get 405.
	hookPattern = "POST " + notificationv1.ReceiverWebhookPath + "{digest}"
	// notFound answers a path no Ready Receiver has, whatever the reason.
	notFound = "no receiver at this path"
	// filterFailed answers a body the Receiver's filters could not be evaluated on.
	filterFailed = "the Receiver's filters could not be evaluated on this body (its events say why); the other objects were asked"
	// Event reasons on the Receiver.
	requestedReason = "ReconciliationRequested"
	failedReason    = "ReconciliationRequestFailed"
)

// handler serves POST /hook/<digest>.
type handler struct {
	s      *Server
	checks *webhook.Checks
}

func newHandler(s *Server) http.Handler {
	h := &handler{s: s, checks: webhook.NewChecks(webhook.Bounds(s.Limits.withDefaults()), s.Claims)}
	mux := http.NewServeMux()
	mux.HandleFunc(hookPattern, h.serveHook)
	return mux
}

// request is one delivery on its way through the handler.
type request struct {
	r        *http.Request
	log      logr.Logger
	receiver *notificationv1.Receiver
	key      types.NamespacedName
	path     string
	body     []byte
	event    string
	now      time.Time
}

// serveHook checks, in this order, what costs least and reveals least first: the path (404), the
// Receiver's state (503), the body's size (413), the credentials (401, 400 for a registry payload
// that does not decode; 429 for an address that spent its failed attempts), the event (200 for a
// ping or an event the Receiver does not handle), a replay (200), the Receiver's rate (429); then
// it asks the objects to reconcile (200). A request that carries the token the receiver last read
// has the Receiver's Secret read once it is known to ask something; any other is checked against
// the Secret first, while its address has failed attempts left. It reads best whole, the
// checks in that order.
func (h *handler) serveHook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req := &request{r: r, log: ctrl.Log.WithName(logName).WithValues("remote", r.RemoteAddr), now: time.Now()}
	if !h.findReceiver(ctx, w, req) {
		return
	}
	receiver := req.receiver

	var ok bool
	if req.body, ok = h.checks.ReadBody(w, r); !ok {
		req.log.Info("request refused: the body could not be read or is too large")
		return
	}
	req.event = event(receiver.Spec.Type, r.Header)
	if req.event != "" {
		req.log = req.log.WithValues("event", clean(req.event))
	}
	if id := deliveryID(receiver.Spec.Type, r.Header); id != "" {
		req.log = req.log.WithValues("delivery", clean(id))
	}

	secretKey := types.NamespacedName{Namespace: req.key.Namespace, Name: receiver.Spec.SecretRef.Name}
	caller, read := h.checks.KnownCaller(secretKey, func(token []byte) bool {
		return receiver.GetWebhookPath(string(token)) == req.path && authenticate(receiver.Spec.Type, r.Header, req.body, token) == nil
	})
	if !caller {
		if read && h.checks.RefusedSource(w, r, req.now) {
			req.log.Info("request refused: too many failed attempts from this address")
			return
		}
		if !h.checkSecret(ctx, w, req, secretKey) {
			return
		}
	}

	switch {
	case isPing(receiver.Spec.Type, req.event):
		req.log.Info("ping answered")
		webhook.Reply(w, http.StatusOK, "pong")
		return
	case !handlesEvent(receiver, req.event):
		req.log.Info("event not handled by this receiver")
		webhook.Reply(w, http.StatusOK, "event "+quote(req.event)+" is not handled by this receiver")
		return
	}

	doc := routing.Payload(r.Header, req.body)
	var p *routing.Push
	if routing.Routable(receiver.Spec.Type, req.event) && doc != nil {
		if pp, ok := routing.ParsePush(doc); ok {
			p = pp
		}
	}
	keys := replayKeys(receiver, deliveryID(receiver.Spec.Type, r.Header), p, req.body)
	if !h.claim(ctx, w, req, keys) {
		return
	}
	if !h.checks.AllowRate(w, req.key, req.now, "too many requests for this receiver") {
		h.forget(ctx, keys)
		req.log.Info("request refused: rate limit")
		return
	}
	// A caller was authenticated with the token last read: the Secret is read again before
	// anything is asked, so that a rotated token is refused at once.
	if caller && !h.checkSecret(ctx, w, req, secretKey) {
		h.forget(ctx, keys)
		return
	}

	if doc == nil {
		doc = map[string]any{}
	}
	out := requestReconciliations(ctx, h.s.Client, selection{
		receiver: receiver, push: p, req: doc, allowCrossNamespace: h.s.AllowCrossNamespaceRefs,
	}, req.now)
	h.report(req, p, out)
	if len(out.errs) > 0 {
		h.forget(ctx, keys)
		// A filter that fails on this body (a field it lacks, a value of another type) fails the
		// same way on every retry: the body is at fault, not the receiver.
		if out.evalFailed == len(out.errs) {
			webhook.Reply(w, http.StatusBadRequest, filterFailed)
			return
		}
		webhook.Reply(w, http.StatusInternalServerError, "could not ask every object to reconcile; send the delivery again")
		return
	}
	webhook.Reply(w, http.StatusOK, requestedMessage(len(out.requested)))
}

// findReceiver finds the Receiver of the request's path, and checks that it takes requests:
// 404 for a path no Receiver has, 503 for a suspended Receiver or one not Ready. It answers the
// request and returns false when the request goes no further.
func (h *handler) findReceiver(ctx context.Context, w http.ResponseWriter, req *request) bool {
	digest := req.r.PathValue("digest")
	if !isDigest(digest) {
		webhook.Reply(w, http.StatusNotFound, notFound)
		return false
	}
	req.path = notificationv1.ReceiverWebhookPath + digest
	receiver, err := h.receiverAt(ctx, req.path)
	if err != nil {
		req.log.Error(err, "finding the receiver of a path")
		webhook.Reply(w, http.StatusInternalServerError, "could not find the receiver")
		return false
	}
	if receiver == nil {
		webhook.Reply(w, http.StatusNotFound, notFound)
		return false
	}
	req.receiver, req.key = receiver, client.ObjectKeyFromObject(receiver)
	req.log = req.log.WithValues("receiver", req.key.String(), "type", receiver.Spec.Type)
	switch {
	case receiver.Spec.Suspend:
		webhook.Reply(w, http.StatusServiceUnavailable, "the receiver is suspended")
		return false
	case !conditions.IsReady(receiver) || receiver.Spec.SecretRef == nil:
		webhook.Reply(w, http.StatusServiceUnavailable, "the receiver is not ready")
		return false
	}
	return true
}

// claim remembers the delivery by its keys, so that no replica handles it twice. It answers a
// delivery already received (200) or one it cannot remember now (503, 429), and returns false
// then.
func (h *handler) claim(ctx context.Context, w http.ResponseWriter, req *request, keys [][32]byte) bool {
	for i, k := range keys {
		replay, full, err := h.checks.Seen(ctx, k, req.now)
		switch {
		case err != nil:
			h.forget(ctx, keys[:i])
			req.log.Error(err, "recording the delivery")
			webhook.Reply(w, http.StatusServiceUnavailable, "could not record the delivery: send it again later")
			return false
		case replay:
			req.log.Info("delivery already received")
			webhook.Reply(w, http.StatusOK, "this delivery was already received")
			return false
		case full:
			h.forget(ctx, keys[:i])
			webhook.Reply(w, http.StatusTooManyRequests, "too many deliveries to remember: send it again later")
			return false
		}
	}
	return true
}

// checkSecret reads the Receiver's Secret and checks the request against its token: the path
// must be the one the token gives (a rotated token moves the Receiver to another path) and the
// credentials must be the token's. It answers the request and returns false when they are not.
func (h *handler) checkSecret(ctx context.Context, w http.ResponseWriter, req *request, secretKey types.NamespacedName) bool {
	token, err := h.checks.Token(ctx, h.s.Client, secretKey, notificationv1.TokenKey)
	if err != nil && !apierrors.IsNotFound(err) {
		req.log.Error(err, "reading the Secret of spec.secretRef", "secret", secretKey.Name)
		webhook.Reply(w, http.StatusInternalServerError, "could not read the receiver's Secret")
		return false
	}
	if len(token) == 0 {
		h.checks.Fail(req.r, req.now)
		req.log.Info("request refused: the Secret of spec.secretRef or its token is missing", "secret", secretKey.Name)
		webhook.Reply(w, http.StatusServiceUnavailable, "the receiver is not ready")
		return false
	}
	if req.receiver.GetWebhookPath(string(token)) != req.path {
		h.checks.Fail(req.r, req.now)
		req.log.Info("request refused: the path is not the one of the receiver's current token")
		webhook.Reply(w, http.StatusNotFound, notFound)
		return false
	}
	if err := authenticate(req.receiver.Spec.Type, req.r.Header, req.body, token); err != nil {
		h.checks.Fail(req.r, req.now)
		if errors.Is(err, errUnauthenticated) {
			req.log.Info("request refused: bad token or signature")
			webhook.Reply(w, http.StatusUnauthorized, err.Error())
			return false
		}
		req.log.Info("request refused: " + err.Error())
		webhook.Reply(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// receiverAt finds the Receiver whose status.webhookPath is path (the index of the controller's
// cache); nil when none is, or when several are, which a path of 256 bits makes unlikely.
func (h *handler) receiverAt(ctx context.Context, path string) (*notificationv1.Receiver, error) {
	list := &notificationv1.ReceiverList{}
	if err := h.s.Client.List(ctx, list, client.MatchingFields{WebhookPathIndex: path}); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// replayKeys identify a delivery: the sender's delivery id, and the body of a push (the same push
// sent again under another id is the same push). Each is salted with the Receiver.
func replayKeys(r *notificationv1.Receiver, id string, p *routing.Push, body []byte) [][32]byte {
	var keys [][32]byte
	prefix := r.Namespace + "/" + r.Name + "\n"
	if id != "" {
		keys = append(keys, sha256.Sum256([]byte("delivery\n"+prefix+id)))
	}
	if p != nil {
		keys = append(keys, sha256.Sum256(append([]byte("push\n"+prefix), body...)))
	}
	return keys
}

// forget drops the claims of a delivery that was not handled: its sender may send it again.
func (h *handler) forget(ctx context.Context, keys [][32]byte) {
	if err := h.checks.Forget(ctx, keys...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "forgetting a delivery that was not handled")
	}
}

// isDigest tells whether s is a hex SHA-256, as webhook paths end: nothing else reaches the index.
func isDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
