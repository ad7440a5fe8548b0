package fluxalerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
	"github.com/sluice-gitops/sluice/gating-controller/internal/celbudget"
	"github.com/sluice-gitops/sluice/gating-controller/internal/notify"
)

// CommitStatus is the status a gitea, github or gitlab Provider sets on the commit an event's
// revision names, as Flux's notification-controller sets it.
type CommitStatus struct {
	// SHA is the commit.
	SHA string
	// Context tells the statuses of one commit apart: Flux's `<kind>/<name>/<first part of the
	// Provider's UID>`, lowercase, or what the Provider's commitStatusExpr returns.
	Context string
	// State is the forge's word for the event: success for info, failure (GitLab: failed) for
	// error, pending (GitLab: running) while the object progresses.
	State string
	// Description is the event's reason in words: "reconciliation succeeded".
	Description string
}

// The bounds of commitStatusExpr.
const (
	commitStatusExprTimeout = time.Second
	// maxCommitStatusContext is GitHub's and Gitea's bound on a status's context.
	maxCommitStatusContext = 255
)

// isCommitStatusType tells the Provider types that set commit statuses.
func isCommitStatusType(typ string) bool {
	switch typ {
	case notificationv1beta3.GiteaProvider, notificationv1beta3.GitHubProvider, notificationv1beta3.GitLabProvider:
		return true
	}
	return false
}

// errNoRevision: the event names no commit; a commit status Provider does not send it (Flux's
// notification-controller drops such events for these types too).
var errNoRevision = errors.New("the event has no revision")

// commitStatus is the status of the event (its metadata already the Alert's) for the Provider.
func commitStatus(ctx context.Context, p *notificationv1beta3.Provider, alert *notificationv1beta3.Alert, ev eventv1.Event) (*CommitStatus, error) {
	rev, ok := ev.Metadata[eventv1.MetaRevisionKey]
	if !ok || rev == "" {
		return nil, errNoRevision
	}
	sha, err := commitOf(rev)
	if err != nil {
		return nil, err
	}
	st := &CommitStatus{SHA: sha, Description: strings.ToLower(strings.Join(splitWords(ev.Reason), " "))}
	st.State = stateOf(p.Spec.Type, ev)
	if p.Spec.CommitStatusExpr == "" {
		uid, _, _ := strings.Cut(string(p.UID), "-")
		st.Context = strings.ToLower(ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name + "/" + uid)
		return st, nil
	}
	if st.Context, err = evalCommitStatusExpr(ctx, p, alert, ev); err != nil {
		return nil, err
	}
	return st, nil
}

// stateOf maps the event to the forge's state.
func stateOf(typ string, ev eventv1.Event) string {
	progressing := ev.Reason == meta.ProgressingReason
	gitlab := typ == notificationv1beta3.GitLabProvider
	switch {
	case progressing && gitlab:
		return "running"
	case progressing:
		return "pending"
	case ev.Severity == eventv1.EventSeverityError && gitlab:
		return "failed"
	case ev.Severity == eventv1.EventSeverityError:
		return "failure"
	default:
		return "success"
	}
}

// hexCommit is a Git commit id: SHA-1 or SHA-256, in hex.
var hexCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// commitOf reads the commit of a revision in each form Flux's controllers write it:
// `<ref>@sha1:<hex>`, `sha1:<hex>`, the older `<ref>/<hex>`, or the bare hex.
func commitOf(rev string) (string, error) {
	s := rev
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	if algo, hex, ok := strings.Cut(s, ":"); ok {
		if algo != "sha1" && algo != "sha256" {
			return "", fmt.Errorf("the revision '%s' names no Git commit", rev)
		}
		s = hex
	}
	if !hexCommit.MatchString(s) {
		return "", fmt.Errorf("the revision '%s' names no Git commit", rev)
	}
	return s, nil
}

// splitWords splits a reason in CamelCase into its words, keeping an initialism whole:
// "HealthCheckFailed" is health, check, failed; "OCIArtifactPullFailed" is OCI, artifact, ...
func splitWords(s string) []string {
	r := []rune(s)
	var words []string
	start := 0
	for i := 1; i < len(r); i++ {
		upper := unicode.IsUpper(r[i])
		boundary := upper && !unicode.IsUpper(r[i-1]) ||
			upper && i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]) ||
			unicode.IsDigit(r[i]) != unicode.IsDigit(r[i-1])
		if boundary {
			words = append(words, string(r[start:i]))
			start = i
		}
	}
	if start < len(r) {
		words = append(words, string(r[start:]))
	}
	return words
}

// evalCommitStatusExpr evaluates the Provider's commitStatusExpr, as Flux does: a CEL expression
// over `event`, `alert` and `provider` that returns the status's context. A tenant writes it, so
// it is bounded as Flux does not bound it: the budget of package celbudget, a deadline, and the
// length of the context it returns.
func evalCommitStatusExpr(ctx context.Context, p *notificationv1beta3.Provider, alert *notificationv1beta3.Alert, ev eventv1.Event) (string, error) {
	prg, err := celbudget.Compile(commitStatusEnv, p.Spec.CommitStatusExpr, types.StringType)
	if err != nil {
		return "", fmt.Errorf("Provider '%s': spec.commitStatusExpr: %w", p.Name, err)
	}
	vars := map[string]any{}
	for name, obj := range map[string]any{"event": &ev, "alert": alert, "provider": p} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return "", err
		}
		vars[name] = m
	}
	ctx, cancel := context.WithTimeout(ctx, commitStatusExprTimeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, vars)
	id, _ := out.(types.String)
	switch {
	case err != nil:
		return "", fmt.Errorf("Provider '%s': spec.commitStatusExpr: %w", p.Name, err)
	case id == "":
		return "", fmt.Errorf("Provider '%s': spec.commitStatusExpr returned an empty string", p.Name)
	case len(id) > maxCommitStatusContext:
		return "", fmt.Errorf("Provider '%s': spec.commitStatusExpr returned %d bytes, more than the %d a context may have", p.Name, len(id), maxCommitStatusContext)
	}
	return string(id), nil
}

var commitStatusEnv = celbudget.Env("event", "alert", "provider")

// commitStatusBody is what the forge of the type takes.
func (st *CommitStatus) body(typ string) ([]byte, error) {
	switch typ {
	case notificationv1beta3.GiteaProvider, notificationv1beta3.GitHubProvider:
		return json.Marshal(map[string]string{"state": st.State, "context": st.Context, "description": st.Description, "target_url": ""})
	case notificationv1beta3.GitLabProvider:
		return json.Marshal(map[string]string{"state": st.State, "name": st.Context, "description": st.Description})
	}
	return nil, fmt.Errorf("the Provider type %q sets no commit status", typ)
}

// listedStatus is one status of a forge's list: Gitea and GitLab say `status`, GitHub `state`;
// GitLab says `name` where the others say `context`.
type listedStatus struct {
	Context, Name, State, Status, Description string
}

// Delivered reads the commit's statuses as the forge lists them, newest first (GitLab lists the
// latest of each name only): the status is there already when the newest of its context has
// its state and description. Flux skips such a status too: GitHub keeps at most 1,000 statuses
// of a context, and GitLab refuses a transition to the state a status has.
func (st *CommitStatus) delivered(answer []byte) bool {
	var list []listedStatus
	if err := json.Unmarshal(answer, &list); err != nil {
		return false
	}
	for _, s := range list {
		ctx, state := s.Context+s.Name, s.State+s.Status
		if ctx == st.Context {
			return state == st.State && s.Description == st.Description
		}
	}
	return false
}

var _ notify.Deduplicated = Message{}
