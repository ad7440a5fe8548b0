package fluxalerts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"strings"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
	"github.com/sluice-gitops/sluice/shared/secrets"
)

// The keys of a Provider's Secret, Flux's.
const (
	addressKey = "address"
	tokenKey   = "token"
	headersKey = "headers"
)

// Reasons of the Warning events recorded on an Alert.
const (
	// InvalidAlertReason: the Alert or its Provider cannot send (a list that does not compile, a
	// missing Provider or Secret, a type the gating-controller does not send).
	InvalidAlertReason = "InvalidAlert"
	// DeliveryFailedReason: a delivery to the Provider failed.
	DeliveryFailedReason = "DeliveryFailed"
)

// Resolver finds the deliveries of an event: the Alerts that select its object, each with its
// Provider and the Provider's Secret read.
type Resolver struct {
	// Client lists Alerts and reads Providers (cached) and Secrets.
	Client client.Client
	// APIReader reads the labels of the events' objects, uncached: a cached read would start a
	// cluster-wide watch of each kind an event names, which the controller's role (get only)
	// does not allow, and which would wait for a sync that never comes.
	APIReader client.Reader
	// Sender checks the Providers' addresses.
	Sender *notify.Sender
	// EventRecorder records on an Alert why it cannot send.
	EventRecorder record.EventRecorder
	// AllowCrossNamespaceRefs lets an Alert select objects of other namespaces.
	AllowCrossNamespaceRefs bool
}

// Resolve lists the deliveries of a received event, one per Alert that sends it; it runs on the
// queue's goroutine.
func (r *Resolver) Resolve(ctx context.Context, received Message) []notify.Delivery[Message] {
	ev := received.Event
	list := &notificationv1beta3.AlertList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing Alerts")
		return nil
	}
	var out []notify.Delivery[Message]
	for i := range list.Items {
		alert := &list.Items[i]
		if alert.Spec.Suspend || !r.selects(ctx, alert, ev) {
			continue
		}
		if ok, err := filtered(alert, ev.Message); err != nil {
			r.EventRecorder.Event(alert, corev1.EventTypeWarning, InvalidAlertReason, err.Error())
			continue
		} else if !ok {
			continue
		}
		provider := &notificationv1beta3.Provider{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: alert.Namespace, Name: alert.Spec.ProviderRef.Name}, provider); err != nil {
			r.EventRecorder.Eventf(alert, corev1.EventTypeWarning, InvalidAlertReason, "Provider '%s' not found", alert.Spec.ProviderRef.Name)
			continue
		}
		if provider.Spec.Suspend {
			continue
		}
		t, err := r.target(ctx, provider)
		if err != nil {
			r.EventRecorder.Event(alert, corev1.EventTypeWarning, InvalidAlertReason, err.Error())
			continue
		}
		m := Message{Event: withMetadata(alert, ev), Alert: alert.Namespace + "/" + alert.Name,
			Channel: provider.Spec.Channel, Username: provider.Spec.Username, ConnectorCard: connectorCard(provider.Spec.Type, t.URL)}
		if isCommitStatusType(provider.Spec.Type) {
			if m.Status, err = commitStatus(ctx, provider, alert, m.Event); errors.Is(err, errNoRevision) {
				continue
			} else if err == nil {
				err = r.statusTarget(provider, &t, m.Status.SHA)
			}
			if err != nil {
				r.EventRecorder.Event(alert, corev1.EventTypeWarning, InvalidAlertReason, err.Error())
				continue
			}
		}
		out = append(out, notify.Delivery[Message]{Target: t, Event: m})
	}
	return out
}

// statusTarget points the Provider's target at the forge's statuses of the commit.
func (r *Resolver) statusTarget(p *notificationv1beta3.Provider, t *notify.Target, sha string) error {
	api, err := commitStatusAPI(p.Spec.Type, t.URL, sha, t.Token)
	if err != nil {
		return fmt.Errorf("Provider '%s': %w", p.Name, err)
	}
	t.URL, t.Existing = api.post, api.list
	if t.Headers == nil {
		t.Headers = map[string]string{}
	}
	maps.Copy(t.Headers, api.headers)
	if _, err := r.Sender.ParseAddress(t.URL); err != nil {
		return fmt.Errorf("Provider '%s': %w", p.Name, err)
	}
	return nil
}

// selects tells whether one of the Alert's eventSources names the event's object, and the
// Alert's eventSeverity lets the event's severity through.
func (r *Resolver) selects(ctx context.Context, alert *notificationv1beta3.Alert, ev eventv1.Event) bool {
	if alert.Spec.EventSeverity == notificationv1beta3.EventSeverityError && ev.Severity != eventv1.EventSeverityError {
		return false
	}
	o := ev.InvolvedObject
	for _, src := range alert.Spec.EventSources {
		ns := src.Namespace
		if ns == "" {
			ns = alert.Namespace
		}
		if ns != o.Namespace || src.Kind != o.Kind || (ns != alert.Namespace && !r.AllowCrossNamespaceRefs) {
			continue
		}
		if src.Name != "*" && src.Name != o.Name {
			continue
		}
		if src.Name == "*" && len(src.MatchLabels) > 0 && !r.labelsMatch(ctx, o.APIVersion, o.Kind, o.Namespace, o.Name, src.MatchLabels) {
			continue
		}
		return true
	}
	return false
}

// labelsMatch reads the labels of the event's object (its metadata only).
func (r *Resolver) labelsMatch(ctx context.Context, apiVersion, kind, namespace, name string, match map[string]string) bool {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return false
	}
	return labels.SelectorFromSet(match).Matches(labels.Set(obj.GetLabels()))
}

// filtered applies the inclusion and exclusion lists to the event's message.
func filtered(alert *notificationv1beta3.Alert, message string) (bool, error) {
	matches := func(list []string, field string) (bool, error) {
		for i, expr := range list {
			re, err := regexp.Compile(expr)
			if err != nil {
				return false, fmt.Errorf("spec.%s[%d] is not a regular expression: %s", field, i, err)
			}
			if re.MatchString(message) {
				return true, nil
			}
		}
		return false, nil
	}
	if len(alert.Spec.InclusionList) > 0 {
		in, err := matches(alert.Spec.InclusionList, "inclusionList")
		if err != nil || !in {
			return false, err
		}
	}
	out, err := matches(alert.Spec.ExclusionList, "exclusionList")
	return !out, err
}

// withMetadata is the event with its metadata as Flux's notification-controller sends it (the
// keys under the object's API group and under event.toolkit.fluxcd.io/, without the prefix; the
// checksum left out), and the Alert's summary and eventMetadata added, the event's own keys kept.
func withMetadata(alert *notificationv1beta3.Alert, ev eventv1.Event) eventv1.Event {
	group := schema.FromAPIVersionAndKind(ev.InvolvedObject.APIVersion, ev.InvolvedObject.Kind).Group
	meta := make(map[string]string, len(ev.Metadata)+len(alert.Spec.EventMetadata)+1)
	for k, v := range ev.Metadata {
		for _, prefix := range []string{group + "/", eventv1.Group + "/"} {
			if key, ok := strings.CutPrefix(k, prefix); ok && key != eventv1.MetaChecksumKey {
				meta[key] = v
			}
		}
	}
	add := func(k, v string) {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}
	for k, v := range alert.Spec.EventMetadata {
		add(k, v)
	}
	if alert.Spec.Summary != "" {
		add("summary", alert.Spec.Summary)
	}
	ev.Metadata = meta
	return ev
}

// target is where the Provider's deliveries go, read from its spec and Secret; its errors quote
// no secret value.
func (r *Resolver) target(ctx context.Context, p *notificationv1beta3.Provider) (notify.Target, error) {
	t := notify.Target{Key: p.Namespace + "/" + p.Name, Type: p.Spec.Type, URL: p.Spec.Address, Timeout: p.GetTimeout()}
	switch p.Spec.Type {
	case notificationv1beta3.GenericProvider, notificationv1beta3.GenericHMACProvider, notificationv1beta3.SlackProvider,
		notificationv1beta3.DiscordProvider, notificationv1beta3.MSTeamsProvider,
		notificationv1beta3.GiteaProvider, notificationv1beta3.GitHubProvider, notificationv1beta3.GitLabProvider:
	default:
		return t, fmt.Errorf("Provider '%s': the type %s is not sent by the gating-controller (generic, generic-hmac, slack, discord, msteams, gitea, github and gitlab are)", p.Name, p.Spec.Type)
	}
	if p.Spec.ServiceAccountName != "" {
		return t, fmt.Errorf("Provider '%s': spec.serviceAccountName asks for cloud workload identity, which the gating-controller does not have", p.Name)
	}
	if p.Spec.SecretRef != nil {
		data, err := secrets.Data(ctx, r.Client, p.Namespace, p.Spec.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return t, fmt.Errorf("Provider '%s': Secret '%s' not found", p.Name, p.Spec.SecretRef.Name)
			}
			return t, fmt.Errorf("Provider '%s': reading Secret '%s': %s", p.Name, p.Spec.SecretRef.Name, apierrors.ReasonForError(err))
		}
		if a := data[addressKey]; len(a) > 0 {
			t.URL = string(a)
		}
		t.Token = data[tokenKey]
		if h := data[headersKey]; len(h) > 0 {
			if err := yaml.Unmarshal(h, &t.Headers); err != nil {
				return t, fmt.Errorf("Provider '%s': the '%s' key of Secret '%s' is not a YAML map of headers", p.Name, headersKey, p.Spec.SecretRef.Name)
			}
		}
	}
	if p.Spec.Type == notificationv1beta3.GenericHMACProvider && len(t.Token) == 0 {
		return t, fmt.Errorf("Provider '%s': generic-hmac signs with the '%s' key of spec.secretRef's Secret, which is missing", p.Name, tokenKey)
	}
	if isCommitStatusType(p.Spec.Type) && len(t.Token) == 0 {
		return t, fmt.Errorf("Provider '%s': %s authenticates with the '%s' key of spec.secretRef's Secret, which is missing", p.Name, p.Spec.Type, tokenKey)
	}
	if t.URL == "" {
		return t, fmt.Errorf("Provider '%s' has no address: set spec.address or the '%s' key of its Secret", p.Name, addressKey)
	}
	switch p.Spec.Type {
	case notificationv1beta3.SlackProvider:
		// A bot token authenticates to chat.postMessage; a webhook URL needs none.
		if len(t.Token) > 0 {
			if t.Headers == nil {
				t.Headers = map[string]string{}
			}
			t.Headers["Authorization"] = "Bearer " + string(t.Token)
		}
	case notificationv1beta3.DiscordProvider:
		// Discord takes Slack's messages under its webhook's /slack path.
		if u, err := url.Parse(t.URL); err == nil && !strings.HasSuffix(u.Path, "/slack") {
			u.Path = path.Join(u.Path, "slack")
			t.URL = u.String()
		}
	}
	if isCommitStatusType(p.Spec.Type) {
		return t, nil // the address is the repository's; statusTarget checks the API's
	}
	if _, err := r.Sender.ParseAddress(t.URL); err != nil {
		return t, fmt.Errorf("Provider '%s': %w", p.Name, err)
	}
	return t, nil
}

// connectorCard tells whether an msteams address is an Office 365 connector (*.webhook.office.com),
// which takes MessageCards; Teams workflows take Adaptive Cards.
func connectorCard(typ, address string) bool {
	u, err := url.Parse(address)
	return typ == notificationv1beta3.MSTeamsProvider && err == nil && strings.HasSuffix(u.Hostname(), ".webhook.office.com")
}
