package fluxreceiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	notificationv1 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1"
	"github.com/sluice-gitops/sluice/gating-controller/internal/fluxreceiver/routing"
)

// fuzzToken is the token every fuzzed delivery is signed with.
const fuzzToken = "fuzz-token-5d1c"

// receiverTypes are the implemented types, in a fixed order, so that a fuzz input names one by
// its index.
func receiverTypes() []string {
	var out []string
	for typ := range implemented {
		out = append(out, typ)
	}
	slices.Sort(out)
	return out
}

// signed is the request a type's sender makes of body with token: the credentials each type
// takes (a header token, or an HMAC of body in the type's header), the event of the types that
// carry one and the delivery id, as JSON or as a form. The registry types without credentials
// (dockerhub, quay, acr) and generic send none.
func signed(typ string, body []byte, token, event string, form bool) http.Header {
	h := http.Header{"Content-Type": []string{"application/json"}}
	if form {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	switch typ {
	case notificationv1.GenericHMACReceiver:
		h.Set("X-Signature", "sha256="+mac(sha256Hash, token, body))
	case notificationv1.GitHubReceiver:
		h.Set("X-Hub-Signature-256", "sha256="+mac(sha256Hash, token, body))
	case notificationv1.BitbucketReceiver:
		h.Set("X-Hub-Signature", "sha256="+mac(sha256Hash, token, body))
	case notificationv1.GiteaReceiver:
		h.Set("X-Gitea-Signature", mac(sha256Hash, token, body))
	case notificationv1.GitLabReceiver:
		h.Set("X-Gitlab-Token", token)
	case notificationv1.HarborReceiver:
		h.Set("Authorization", token)
	case notificationv1.NexusReceiver:
		h.Set("X-Nexus-Webhook-Signature", mac(sha1Hash, token, body))
	}
	if s, ok := senders[typ]; ok {
		h.Set(s.eventHeader, event)
		h.Set(s.deliveryHeader[0], event)
	}
	return h
}

// shape is what a registry's payload must be, as encoding/json decodes it into the type's
// struct (internal to verify.go, not shared with it): an object of known fields (others are
// ignored), a string, or an array of strings; null stands for any of them.
type shape struct {
	kind   byte // 'o' object, 's' string, 'a' array of strings
	fields map[string]*shape
}

var (
	aString    = &shape{kind: 's'}
	stringList = &shape{kind: 'a'}
)

func object(fields map[string]*shape) *shape { return &shape{kind: 'o', fields: fields} }

// payloadShapes are the registry payloads that the types decode (Flux's receivers decode the same
// fields): Docker Hub, Quay and ACR carry no credentials, and this is the only check of their
// body; Nexus is decoded once its signature is checked.
var payloadShapes = map[string]*shape{
	notificationv1.DockerHubReceiver: object(map[string]*shape{
		"push_data":  object(map[string]*shape{"tag": aString}),
		"repository": object(map[string]*shape{"repo_url": aString}),
	}),
	notificationv1.QuayReceiver: object(map[string]*shape{"docker_url": aString, "updated_tags": stringList}),
	notificationv1.ACRReceiver: object(map[string]*shape{
		"action": aString,
		"target": object(map[string]*shape{"repository": aString, "tag": aString}),
	}),
	notificationv1.NexusReceiver: object(map[string]*shape{"action": aString, "repositoryName": aString}),
}

// fits tells whether body is one JSON value of the shape s: the oracle of the fuzz target, read
// with the tokens of encoding/json's Decoder rather than by decoding into the struct, so that
// every occurrence of a repeated key is checked, as the decoding into a struct checks it.
func fits(body []byte, s *shape) bool {
	if !json.Valid(body) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return fitsValue(dec, s)
}

// fitsValue reads one value of dec and tells whether it fits s (nil: anything).
func fitsValue(dec *json.Decoder, s *shape) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok := tok.(type) {
	case nil:
		return true
	case string:
		return s == nil || s.kind == 's'
	case json.Number, bool:
		return s == nil
	case json.Delim:
		switch {
		case tok == '{' && (s == nil || s.kind == 'o'):
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return false
				}
				var field *shape
				if s != nil {
					field = fieldOf(s, key.(string))
				}
				if !fitsValue(dec, field) {
					return false
				}
			}
		case tok == '[' && (s == nil || s.kind == 'a'):
			var elem *shape
			if s != nil {
				elem = aString
			}
			for dec.More() {
				if !fitsValue(dec, elem) {
					return false
				}
			}
		default:
			return false
		}
		_, err := dec.Token()
		return err == nil
	}
	return false
}

// fieldOf is the field a key of an object fills: encoding/json takes the field of that name, or
// else one whose name is equal under its case folding (ASCII upper case; other letters through
// unicode.ToUpper(unicode.ToLower(r)), as its foldName does). nil: the key is ignored.
func fieldOf(s *shape, key string) *shape {
	if f, ok := s.fields[key]; ok {
		return f
	}
	for name, f := range s.fields {
		if foldName(name) == foldName(key) {
			return f
		}
	}
	return nil
}

func foldName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		b.WriteRune(unicode.ToUpper(unicode.ToLower(r)))
	}
	return b.String()
}

// fuzzFilters are filters a tenant writes over the payload (docs/flux-receiver.md, Resource
// filter): they read fields that a malformed payload lacks or has of another type.
var fuzzFilters = []string{
	`res.metadata.name in req.components`,
	`req.?ref.orValue('') == 'refs/heads/main'`,
	`has(req.repository) && req.repository.name.startsWith('app')`,
	`size(req) < 100 && req.all(k, k != 'x')`,
	`req.push_data.tag.matches('^v[0-9]+')`,
}

// FuzzReceiverPayloads replays the class of Argo CD's CVE-2025-59531, CVE-2025-59537 and
// CVE-2025-59538 (unauthenticated panics in webhook payload parsers, from truncated JSON, nulls
// where objects are expected, values of other types, huge arrays) against every type of the
// Receiver: each fuzzed body is sent with the credentials its type takes, made with the token, so
// that what authenticate decodes behind the credentials is reached, and then goes through
// everything the handler does with a delivery before it asks objects to reconcile: the event,
// Payload, Routable, ParsePush, replayKeys, the CEL filters over the payload and the report.
// Nothing panics, and:
//   - the registry types that decode their payload (dockerhub, quay, acr, nexus) take the body
//     exactly when it is one JSON value of their payload's shape (fits, written apart from
//     verify.go); otherwise authenticate returns a payload error, which the handler answers 400,
//     never success and never 401;
//   - the other types take any body signed with the token, and every type with credentials
//     refuses the body signed with another key (401), whatever the body is;
//   - replayKeys gives one key per delivery id and per routed push.
//
// Checked against reintroduced bugs (then restored): decodePayload returning nil whatever the
// body (the oracle fails on the first body of another shape, e.g. the seed `[]` for quay);
// ParsePush asserting `change.(map[string]any)` without ok (the target panics on the seed
// `{"changes":[null],...}` of the generic type, which routes any body).
func FuzzReceiverPayloads(f *testing.F) {
	typs := receiverTypes()
	valid := map[string]string{
		notificationv1.DockerHubReceiver: `{"push_data":{"tag":"v1"},"repository":{"repo_url":"https://hub.docker.com/r/team/app"}}`,
		notificationv1.QuayReceiver:      `{"docker_url":"quay.io/team/app","updated_tags":["v1","latest"]}`,
		notificationv1.ACRReceiver:       `{"action":"push","target":{"repository":"app","tag":"v1"}}`,
		notificationv1.NexusReceiver:     `{"action":"CREATED","repositoryName":"charts"}`,
		notificationv1.GitHubReceiver:    string(pushGitHub),
		notificationv1.GitLabReceiver:    string(pushGitLab),
		notificationv1.BitbucketReceiver: string(pushBitbucket),
	}
	malformed := []string{
		`{"ref":"refs/heads/main","repository":{"clone_url":"https://git.exa`, // truncated
		`{"push_data":{"tag":"v1"`,
		`null`, `{"repository":null}`, `{"push_data":null,"target":null,"updated_tags":null}`,
		`[]`, `[{"ref":"refs/heads/main"}]`, `{"repository":[]}`, `{"push_data":[],"target":[1],"updated_tags":{}}`,
		`{"ref":1,"repository":"x","changes":{"a":1},"push":{"changes":[null,1,"x",{"new":null}]}}`,
		`{"action":1,"repositoryName":true,"docker_url":2,"push_data":{"tag":3},"updated_tags":[1]}`,
		`{"PUSH_DATA":"x"}`, `{"push_data":{},"push_data":"x"}`, `{"updated_tags":["v1",null]}`,
		`{"changes":[null],"repository":{"links":{"clone":[null,{"href":null}]}}}`,
		`"a string"`, `1e400`, `{"docker_url":1e400}`, `{} {}`, ``, `{`,
		`{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example.com/team/app.git"},"components":["app"]}`,
	}
	huge := []string{
		"[" + strings.Repeat("0,", 9999) + "0]",
		`{"updated_tags":[` + strings.Repeat(`"v",`, 9999) + `"v"]}`,
		`{"updated_tags":[` + strings.Repeat(`1,`, 9999) + `1]}`,
		`{"changes":[` + strings.Repeat(`{"ref":{"id":"refs/heads/x"}},`, 9999) + `{}],"repository":{"clone_url":"https://h/r"}}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), // deeper than encoding/json takes
		`{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
	}
	for i, typ := range typs {
		bodies := append(append([]string{valid[typ]}, malformed...), huge...)
		for _, b := range bodies {
			f.Add(uint8(i), []byte(b), "push", false)
		}
	}
	f.Add(uint8(slices.Index(typs, notificationv1.GitHubReceiver)), []byte("payload="+`%7B%22ref%22%3Anull%7D`), "push", true)
	f.Add(uint8(slices.Index(typs, notificationv1.GitLabReceiver)), []byte(pushGitLab), "Push Hook\x00\x1b[2J", false)

	var filters []*filter
	for _, expr := range fuzzFilters {
		flt, err := compileFilter(expr)
		if err != nil {
			f.Fatalf("filter %q: %v", expr, err)
		}
		filters = append(filters, flt)
	}
	res := &unstructured.Unstructured{}
	res.SetGroupVersionKind(gitRepositoryGVK)
	res.SetNamespace("apps")
	res.SetName("app")
	h := &handler{s: &Server{}}

	f.Fuzz(func(t *testing.T, n uint8, body []byte, evt string, form bool) {
		typ := typs[int(n)%len(typs)]
		receiver := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "hook"},
			Spec: notificationv1.ReceiverSpec{Type: typ}}
		header := signed(typ, body, fuzzToken, evt, form)

		err := authenticate(typ, header, body, []byte(fuzzToken))
		if s, decodes := payloadShapes[typ]; decodes {
			ok := fits(body, s)
			switch {
			case ok && err != nil:
				t.Fatalf("%s refused a body of its payload's shape: %v\n%q", typ, err, body)
			case !ok && err == nil:
				t.Fatalf("%s took a body that is not its payload: %q", typ, body)
			case errors.Is(err, errUnauthenticated):
				t.Fatalf("%s refused a body signed with the token as unauthenticated: %q", typ, body)
			}
		} else if err != nil {
			t.Fatalf("%s refused a body signed with the token: %v\n%q", typ, err, body)
		}
		switch typ {
		case notificationv1.GenericReceiver, notificationv1.DockerHubReceiver, notificationv1.QuayReceiver, notificationv1.ACRReceiver:
		default:
			wrong := signed(typ, body, "not-the-token", evt, form)
			if err := authenticate(typ, wrong, body, []byte(fuzzToken)); !errors.Is(err, errUnauthenticated) {
				t.Fatalf("%s: a body signed with another key got %v, not %v: %q", typ, err, errUnauthenticated, body)
			}
		}
		if err != nil {
			return // answered 400: nothing else reads the body
		}

		ev := event(typ, header)
		_, _ = isPing(typ, ev), handlesEvent(receiver, ev)
		doc := routing.Payload(header, body)
		var p *routing.Push
		if routing.Routable(typ, ev) && doc != nil {
			if pp, ok := routing.ParsePush(doc); ok {
				p = pp
			}
		}
		id := deliveryID(typ, header)
		keys := replayKeys(receiver, id, p, body)
		if want := btoi(id != "") + btoi(p != nil); len(keys) != want {
			t.Fatalf("%d replay keys for a delivery id %q and a push %v", len(keys), id, p)
		}
		if doc == nil {
			doc = map[string]any{}
		}
		ctx, cancel := context.WithTimeout(context.Background(), filterTimeout)
		defer cancel()
		for _, flt := range filters {
			_, _ = acceptedBy(ctx, res, doc, flt) // an error is answered 400, as documented
		}
		h.report(&request{log: logr.Discard(), receiver: receiver, key: types.NamespacedName{Namespace: "apps", Name: "hook"},
			event: ev, now: time.Now()}, p, outcome{requested: []target{{kind: "GitRepository", key: types.NamespacedName{Namespace: "apps", Name: "app"}}}})
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
