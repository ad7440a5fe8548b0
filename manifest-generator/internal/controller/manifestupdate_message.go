package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-gitops/sluice/shared/templatebudget"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// The limits of spec.git.messageTemplate (docs/manifestupdate.md, "Message template limits").
// The template is written by whoever may create a ManifestUpdate and runs in the manager, before
// any clone: without limits a few bytes of it take the manager's memory or hold a worker
// forever. They are the kinds of limits of a ResourceSet build (shared/templatebudget), sized
// for one commit message rather than for thousands of objects.
const (
	// MaxCommitMessageSize bounds the commit message: what the template writes.
	MaxCommitMessageSize = 64 << 10
	// MaxMessageResultsSize bounds the values the printing functions of the template return,
	// summed.
	MaxMessageResultsSize = 1 << 20
	// MaxMessageIterations bounds the loop iterations of the template, counted when each loop
	// starts.
	MaxMessageIterations = 100_000
	// MaxMessageTemplateCalls bounds the template calls (template, block).
	MaxMessageTemplateCalls = 1_000
	// MessageTemplateTimeout bounds how long the template runs.
	MessageTemplateTimeout = time.Second
)

var messageLimits = templatebudget.Limits{
	Unit:          "commit message",
	RenderedSize:  MaxCommitMessageSize,
	ResultsSize:   MaxMessageResultsSize,
	Iterations:    MaxMessageIterations,
	TemplateCalls: MaxMessageTemplateCalls,
}

// messageFuncs are text/template's builtins, with those that print metered and printf bounded.
var messageFuncs = &templatebudget.Funcs{Map: templatebudget.Printers()}

// messageFix says what to do about a template over its limits.
var messageFix = fmt.Sprintf("make spec.git.messageTemplate simpler: it may write %s, run %d loop iterations and %d template calls, within %s",
	templatebudget.SizeString(MaxCommitMessageSize), MaxMessageIterations, MaxMessageTemplateCalls, MessageTemplateTimeout)

// messageError is a spec.git.messageTemplate that gives no message; only a new spec fixes it.
type messageError struct {
	reason string
	err    error
}

func (e *messageError) Error() string { return e.err.Error() }

// commitMessage executes spec.git.messageTemplate (or the default) over the object, within the
// limits above. Its errors are terminal *messageErrors, unless ctx itself is done.
func commitMessage(ctx context.Context, obj *generatorv1.ManifestUpdate) (string, error) {
	invalid := func(err error) error {
		return reconcile.TerminalError(&messageError{reason: generatorv1.InvalidMessageTemplateReason, err: err})
	}
	tmpl, err := template.New("message").Option("missingkey=error").Funcs(messageFuncs.Map).Parse(obj.GetMessageTemplate())
	if err != nil {
		return "", invalid(fmt.Errorf("spec.git.messageTemplate: %w", err))
	}
	templatebudget.Guard(tmpl, messageFuncs)

	rctx, cancel := context.WithTimeout(ctx, MessageTemplateTimeout)
	defer cancel()
	budget := templatebudget.New(rctx, messageLimits)
	var buf bytes.Buffer
	err = tmpl.Funcs(budget.FuncMap(messageFuncs)).Execute(budget.Writer(&buf), obj)
	var limit *templatebudget.LimitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", err
	case errors.As(err, &limit):
		return "", reconcile.TerminalError(&messageError{reason: generatorv1.MessageTemplateOverLimitReason,
			err: fmt.Errorf("spec.git.messageTemplate: %w: %s", err, messageFix)})
	case errors.Is(err, context.DeadlineExceeded):
		return "", reconcile.TerminalError(&messageError{reason: generatorv1.MessageTemplateOverLimitReason,
			err: fmt.Errorf("spec.git.messageTemplate: not finished within %s: %s", MessageTemplateTimeout, messageFix)})
	default:
		return "", invalid(fmt.Errorf("spec.git.messageTemplate: %w", err))
	}
	msg := strings.TrimSpace(buf.String())
	if msg == "" {
		return "", invalid(errors.New("spec.git.messageTemplate gives an empty message"))
	}
	return msg + "\n", nil
}

// messageReason is the reason of a failed commitMessage.
func messageReason(err error) string {
	var m *messageError
	if errors.As(err, &m) {
		return m.reason
	}
	return generatorv1.ReconciliationFailedReason
}
