package secrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Mask replaces the values of a Secret in a message: the marker fluxcd/pkg/ssa puts in place of
// a Secret's data in a diff, which `kubectl resourceset build --diff` shows too.
const Mask = "***"

// minMasked is the length below which a value is left in a message: it cannot be kept readable
// when every "1" or "on" in it is replaced, and a value that short is no credential.
const minMasked = 4

// IsSecret says whether obj (an object as the API serves it, or its unstructured content) is a
// core Secret.
func IsSecret(obj map[string]any) bool {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return apiVersion == "v1" && kind == "Secret"
}

// MaskValues replaces, in text, every value of the Secret obj (the strings and numbers under
// `data`, each also base64-decoded, and under `stringData`, whatever shape they have) by Mask, in
// each form a message may quote it in: as it is, quoted as Go quotes it (%q, %#v), and escaped as
// JSON escapes it. The API server echoes what it could not decode (`.data: expected map, got
// &{<value>}`), and CEL quotes the values it fails on (`no such key: <value>`): such messages
// reach conditions, events, logs and notifications. obj that is not a Secret leaves text as it
// is.
func MaskValues(obj map[string]any, text string) string {
	if !IsSecret(obj) || text == "" {
		return text
	}
	var values []string
	add := func(v string) {
		if len(v) >= minMasked {
			values = append(values, v)
		}
	}
	var walk func(v any, decode bool)
	walk = func(v any, decode bool) {
		switch v := v.(type) {
		case map[string]any:
			for _, item := range v {
				walk(item, decode)
			}
		case []any:
			for _, item := range v {
				walk(item, decode)
			}
		case string:
			add(v)
			if decode {
				if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
					add(string(raw))
				}
			}
		case nil:
		default:
			add(fmt.Sprint(v))
		}
	}
	walk(obj["data"], true)
	walk(obj["stringData"], false)

	forms := map[string]bool{}
	for _, v := range values {
		forms[v] = true
		forms[unquote(strconv.Quote(v))] = true
		forms[unquote(strconv.QuoteToASCII(v))] = true
		for _, html := range []bool{true, false} {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(v) == nil {
				forms[unquote(strings.TrimSuffix(b.String(), "\n"))] = true
			}
		}
	}
	// Longest first, so that a value inside another is not masked in part.
	sorted := make([]string, 0, len(forms))
	for f := range forms {
		if len(f) >= minMasked {
			sorted = append(sorted, f)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, f := range sorted {
		text = strings.ReplaceAll(text, f, Mask)
	}
	return text
}

// MaskError is err with the values of the Secret obj masked in its text (MaskValues); err when
// obj is not a Secret or the text holds none of its values. An API error stays an
// *apierrors.StatusError (its message and causes masked), so that its reason, code and causes
// are still read as before; another error keeps the original in its chain for errors.Is and
// errors.As, with the masked text.
func MaskError(obj map[string]any, err error) error {
	if err == nil || !IsSecret(obj) {
		return err
	}
	var status *apierrors.StatusError
	if errors.As(err, &status) && status == err {
		masked := status.ErrStatus
		masked.Message = MaskValues(obj, masked.Message)
		if d := masked.Details; d != nil {
			details := *d
			details.Causes = append(details.Causes[:0:0], d.Causes...)
			for i := range details.Causes {
				details.Causes[i].Message = MaskValues(obj, details.Causes[i].Message)
			}
			masked.Details = &details
		}
		return &apierrors.StatusError{ErrStatus: masked}
	}
	text := err.Error()
	if masked := MaskValues(obj, text); masked != text {
		return &maskedError{text: masked, err: err}
	}
	return err
}

// unquote drops the quotes around a quoted string.
func unquote(quoted string) string { return quoted[1 : len(quoted)-1] }

type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

// MaskingClient is a client whose writes of Secrets (create, update, patch: server-side applies
// and their dry-runs) fail with errors that do not quote the Secret's values (MaskError): what
// the appliers of the ResourceSets and ManifestGenerations, and `kubectl resourceset build
// --diff`, report of an invalid Secret.
type MaskingClient struct {
	client.Client
}

func (c MaskingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return maskFor(obj, c.Client.Create(ctx, obj, opts...))
}

func (c MaskingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return maskFor(obj, c.Client.Update(ctx, obj, opts...))
}

func (c MaskingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	// The object is what was sent: read its values before the call, which replaces it with the
	// API server's answer on success only.
	content := contentOf(obj)
	return MaskError(content, c.Client.Patch(ctx, obj, patch, opts...))
}

func maskFor(obj client.Object, err error) error {
	if err == nil {
		return nil
	}
	return MaskError(contentOf(obj), err)
}

// contentOf is the unstructured content of obj (a copy for a typed Secret), nil for another
// typed object.
func contentOf(obj client.Object) map[string]any {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.Object
	case *corev1.Secret:
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil
		}
		content["apiVersion"], content["kind"] = "v1", "Secret"
		return content
	}
	return nil
}
