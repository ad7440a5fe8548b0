package gatereceiver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/response"
	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// respondWith serves POST /gates/<namespace>/<name>/approve or /reject.
func (h *handler) respondWith(decision gatingv1.GateDecision) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { h.serveRespond(w, r, decision) }
}

// serveRespond creates a GateApproval in the name of the caller, with the caller's own
// Kubernetes token: the receiver trusts neither the token nor the body, the API server says who
// the caller is and, by RBAC and the gateapproval-identity policy, whether they may respond; the
// controller lends nothing of its own. It checks, in this order, what costs least and reveals
// least first: a token at all (401), the source's failed attempts (429), the body's size (413),
// the token (401, from a SelfSubjectReview), the caller's right to create GateApprovals in the
// namespace (403, a SelfSubjectAccessReview: only then are the gate's existence and its approval
// told), the gate (404) and its spec.approval (409), the gate's rate of responses (429), the
// body (400), its timestamp (401), a replay (409); then creates the GateApproval (201), or
// answers the API server's refusal (403, 400). It reads best whole, the checks in that order.
func (h *handler) serveRespond(w http.ResponseWriter, r *http.Request, decision gatingv1.GateDecision) {
	ctx := r.Context()
	log := ctrl.Log.WithName("receiver").WithValues("remote", r.RemoteAddr)
	key, ok := parseRespondPath(r)
	if !ok {
		webhook.Reply(w, http.StatusNotFound, "no such gate")
		return
	}
	log = log.WithValues("gate", key.String(), "decision", decision)
	if h.s.APIServer == nil {
		webhook.Reply(w, http.StatusNotImplemented, "this receiver does not take approvals")
		return
	}
	token := bearerToken(r)
	if token == "" {
		log.Info("response refused: no bearer token")
		webhook.Reply(w, http.StatusUnauthorized, "a Kubernetes bearer token is required: Authorization: Bearer <token>")
		return
	}
	now := time.Now()
	if !h.callers.Known(token, now) && h.checks.RefusedSource(w, r, now) {
		log.Info("response refused: too many failed attempts from this address")
		return
	}
	raw, ok := h.checks.ReadBody(w, r)
	if !ok {
		return
	}

	cfg, who, log, ok := h.responder(ctx, w, r, log, token, key.Namespace, now)
	if !ok {
		return
	}

	gate := &gatingv1.Gate{}
	if err := h.s.Client.Get(ctx, key, gate); err != nil {
		if apierrors.IsNotFound(err) {
			webhook.Reply(w, http.StatusNotFound, "gate "+key.String()+" not found")
			return
		}
		log.Error(err, "reading the gate")
		webhook.Reply(w, http.StatusInternalServerError, "could not read the gate")
		return
	}
	if gate.Spec.Approval == nil {
		webhook.Reply(w, http.StatusConflict, "gate "+key.String()+" has no spec.approval: nothing waits for approvals (use /open)")
		return
	}
	if !h.responses.Allow(key, now) {
		webhook.TooMany(w, h.limits.RateInterval, tooManyForGate)
		log.Info("request refused: rate limit")
		return
	}

	req, err := parseRespondBody(raw)
	if err != nil {
		webhook.Reply(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkTimestamp(req.Timestamp, now, h.limits.Window); err != nil {
		log.Info("response refused: stale timestamp", "timestamp", req.Timestamp)
		webhook.Reply(w, http.StatusUnauthorized, err.Error())
		return
	}
	// The same body from another approver, or to the other route, is another response.
	seenKey := sha256.Sum256([]byte(string(decision) + "\n" + key.String() + "\n" + who.Username + "\n" + string(raw)))
	if h.refusedReplay(ctx, w, log, seenKey, now) {
		return
	}

	revision := req.Revision
	if revision == "" {
		// As `kubectl gate approve` does: the gate counts only responses for the pending revision.
		revision = response.PendingRevision(gate)
	}
	ga := response.New(gate, who, decision, req.Reason, revision)
	if err := createAsCaller(ctx, cfg, h.s.Client, ga); err != nil {
		if err := h.checks.Forget(ctx, seenKey); err != nil {
			log.Error(err, "forgetting a request that was not written")
		}
		replyAPIError(w, log, err, "create the GateApproval")
		return
	}

	done := pastTense(decision) + " by " + who.Username
	if revision != "" {
		done += " for revision " + revision
	}
	done += " (GateApproval " + ga.Name + ")"
	if h.s.EventRecorder != nil {
		h.s.EventRecorder.Eventf(gate, corev1.EventTypeNormal, "ReceiverResponse", "%s through the webhook receiver%s", done, suffix(req.Reason))
	}
	log.Info(string(decision)+" recorded", "gateApproval", ga.Name, "revision", revision, "reason", req.Reason)
	webhook.Reply(w, http.StatusCreated, done)
}

// responder asks the API server, with the caller's token, who the caller is (401 when it does
// not accept the token) and whether they may create GateApprovals in namespace (403 when not).
// It answers the request and returns false when the caller may not respond.
func (h *handler) responder(ctx context.Context, w http.ResponseWriter, r *http.Request, log logr.Logger, token, namespace string,
	now time.Time) (cfg *rest.Config, who authenticationv1.UserInfo, _ logr.Logger, ok bool) {
	cfg, err := h.conn.config(token)
	if err != nil {
		log.Error(err, "connecting to the API server")
		webhook.Reply(w, http.StatusInternalServerError, "could not connect to the API server")
		return nil, who, log, false
	}
	who, err = response.UserInfo(ctx, cfg)
	switch {
	case err == nil && who.Username != "" && who.Username != "system:anonymous":
	case err == nil || apierrors.IsUnauthorized(err):
		h.checks.Fail(r, now)
		log.Info("response refused: the API server did not accept the token")
		webhook.Reply(w, http.StatusUnauthorized, tokenRefused)
		return nil, who, log, false
	default:
		replyAPIError(w, log, err, "ask the API server who the caller is")
		return nil, who, log, false
	}
	h.callers.Accepted(token, now)
	log = log.WithValues("user", who.Username)

	allowed, why, err := mayRespond(ctx, cfg, namespace)
	if err != nil {
		replyAPIError(w, log, err, "ask the API server whether the caller may respond")
		return nil, who, log, false
	}
	if !allowed {
		msg := fmt.Sprintf("User %q cannot create resource \"gateapprovals\" in API group %q in the namespace %q",
			who.Username, gatingv1.GroupVersion.Group, namespace)
		if why != "" {
			msg += ": " + why
		}
		log.Info("response refused: RBAC", "message", msg)
		webhook.Reply(w, http.StatusForbidden, msg)
		return nil, who, log, false
	}
	return cfg, who, log, true
}

// tokenRefused is the answer to a token the API server does not accept (or none).
const tokenRefused = "the API server did not accept the token"

// mayRespond asks the API server, with the caller's credentials, whether the caller may create
// GateApprovals in the namespace (a SelfSubjectAccessReview, which every authenticated user may
// make): a caller who may not learns nothing of the namespace's gates.
func mayRespond(ctx context.Context, cfg *rest.Config, namespace string) (bool, string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, "", err
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "create", Group: gatingv1.GroupVersion.Group, Resource: "gateapprovals",
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	return review.Status.Allowed, review.Status.Reason, nil
}

// createAsCaller creates the GateApproval with the caller's credentials, so that RBAC and the
// admission policies judge the caller, not the controller. The controller's scheme and REST
// mapper are reused: they hold no credentials, and spare a discovery per request.
func createAsCaller(ctx context.Context, cfg *rest.Config, controller client.Client, ga *gatingv1.GateApproval) error {
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme(), Mapper: controller.RESTMapper()})
	if err != nil {
		return err
	}
	return c.Create(ctx, ga)
}

func pastTense(d gatingv1.GateDecision) string {
	if d == gatingv1.DecisionReject {
		return "rejected"
	}
	return "approved"
}

// suffix is ": reason", or nothing without a reason.
func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}
