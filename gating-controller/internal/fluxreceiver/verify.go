package fluxreceiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/webhook"
)

// implemented are the types this receiver serves. The others of Flux's enum (generic-oidc, gcr,
// cdevents) stall the Receiver with a message saying so.
var implemented = map[string]bool{
	notificationv1.GenericReceiver:     true,
	notificationv1.GenericHMACReceiver: true,
	notificationv1.GitHubReceiver:      true,
	notificationv1.GiteaReceiver:       true,
	notificationv1.GitLabReceiver:      true,
	notificationv1.BitbucketReceiver:   true,
	notificationv1.HarborReceiver:      true,
	notificationv1.DockerHubReceiver:   true,
	notificationv1.QuayReceiver:        true,
	notificationv1.NexusReceiver:       true,
	notificationv1.ACRReceiver:         true,
}

// sender is what a type reads of a request besides its credentials: the headers that name the
// event and the delivery, and the events that are only pings.
type sender struct {
	eventHeader    string
	deliveryHeader []string
	pings          []string
}

var senders = map[string]sender{
	notificationv1.GitHubReceiver:    {eventHeader: "X-GitHub-Event", deliveryHeader: []string{"X-GitHub-Delivery"}, pings: []string{"ping"}},
	notificationv1.GiteaReceiver:     {eventHeader: "X-Gitea-Event", deliveryHeader: []string{"X-Gitea-Delivery"}},
	notificationv1.GitLabReceiver:    {eventHeader: "X-Gitlab-Event", deliveryHeader: []string{"Idempotency-Key", "X-Gitlab-Event-UUID"}},
	notificationv1.BitbucketReceiver: {eventHeader: "X-Event-Key", deliveryHeader: []string{"X-Request-Id"}, pings: []string{"diagnostics:ping"}},
}

// event is the event a request names, "" for a type without events.
func event(typ string, h http.Header) string {
	if s, ok := senders[typ]; ok {
		return h.Get(s.eventHeader)
	}
	return ""
}

// deliveryID is the sender's id of the delivery, "" when the type or the request has none.
func deliveryID(typ string, h http.Header) string {
	for _, name := range senders[typ].deliveryHeader {
		if id := h.Get(name); id != "" {
			return id
		}
	}
	return ""
}

// isPing tells whether the event only checks that the receiver answers.
func isPing(typ, event string) bool {
	for _, p := range senders[typ].pings {
		if strings.EqualFold(p, event) {
			return true
		}
	}
	return false
}

// handlesEvent tells whether the Receiver's spec.events takes the event: an empty list takes
// every event, and types without events (generic, registries) ignore the list, as Flux does.
func handlesEvent(r *notificationv1.Receiver, event string) bool {
	if len(r.Spec.Events) == 0 {
		return true
	}
	if _, ok := senders[r.Spec.Type]; !ok {
		return true
	}
	for _, e := range r.Spec.Events {
		if strings.EqualFold(e, event) {
			return true
		}
	}
	return false
}

// errUnauthenticated is a request without the token, or with a signature the token did not make.
var errUnauthenticated = errors.New("bad token or signature")

// authenticate checks the request of a Receiver of type typ against its token: nil, or
// errUnauthenticated, or an error saying why the body is not the payload the type expects. Every
// comparison takes constant time (internal/webhook).
func authenticate(typ string, h http.Header, body, token []byte) error {
	ok := true
	switch typ {
	case notificationv1.GenericHMACReceiver:
		ok = webhook.ValidPrefixedHMAC(h.Get("X-Signature"), body, token, "sha1", "sha256", "sha512")
	case notificationv1.GitHubReceiver:
		// GitHub signs with SHA-256 (X-Hub-Signature-256) and SHA-1 (X-Hub-Signature); the
		// stronger one is checked when both are there.
		sig := h.Get("X-Hub-Signature-256")
		if sig == "" {
			sig = h.Get("X-Hub-Signature")
		}
		ok = webhook.ValidPrefixedHMAC(sig, body, token, "sha1", "sha256", "sha512")
	case notificationv1.BitbucketReceiver:
		ok = webhook.ValidPrefixedHMAC(h.Get("X-Hub-Signature"), body, token, "sha1", "sha256", "sha512")
	case notificationv1.GiteaReceiver:
		ok = webhook.ValidHMAC("sha256", strings.TrimSpace(h.Get("X-Gitea-Signature")), body, token)
	case notificationv1.GitLabReceiver:
		ok = webhook.EqualToken([]byte(h.Get("X-Gitlab-Token")), token)
	case notificationv1.HarborReceiver:
		ok = webhook.EqualToken([]byte(h.Get("Authorization")), token)
	case notificationv1.NexusReceiver:
		if !webhook.ValidHMAC("sha1", strings.TrimSpace(h.Get("X-Nexus-Webhook-Signature")), body, token) {
			return errUnauthenticated
		}
		return decodePayload("Nexus", body, &struct {
			Action         string `json:"action"`
			RepositoryName string `json:"repositoryName"`
		}{})
	case notificationv1.DockerHubReceiver:
		return decodePayload("Docker Hub", body, &struct {
			PushData struct {
				Tag string `json:"tag"`
			} `json:"push_data"`
			Repository struct {
				URL string `json:"repo_url"`
			} `json:"repository"`
		}{})
	case notificationv1.QuayReceiver:
		return decodePayload("Quay", body, &struct {
			DockerURL   string   `json:"docker_url"`
			UpdatedTags []string `json:"updated_tags"`
		}{})
	case notificationv1.ACRReceiver:
		return decodePayload("ACR", body, &struct {
			Action string `json:"action"`
			Target struct {
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
			} `json:"target"`
		}{})
	}
	if !ok {
		return errUnauthenticated
	}
	return nil
}

// decodePayload checks that the body is the JSON payload of a registry's webhook: the only check
// Flux makes of Docker Hub, Quay and ACR deliveries, which carry no credentials.
func decodePayload(what string, body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("the body is not a %s webhook payload: %w", what, err)
	}
	return nil
}
