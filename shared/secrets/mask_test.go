package secrets

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Secret's values are masked in every form a message quotes them in; short values, other
// kinds and the API error's type are left as they are.
func TestMaskValues(t *testing.T) {
	g := NewWithT(t)
	const token = `s3cr3t"\token`
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"data":       map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(token)), "pin": "MTI="},
		"stringData": map[string]any{"password": "hunter2-long"}}
	for _, form := range []string{token, strconv.Quote(token), `s3cr3t\"\\token`, base64.StdEncoding.EncodeToString([]byte(token)), "hunter2-long"} {
		masked := MaskValues(secret, "got &{"+form+"}")
		g.Expect(masked).To(And(ContainSubstring(Mask), Not(ContainSubstring("s3cr3t")), Not(ContainSubstring("hunter2")),
			Not(ContainSubstring(form))), form)
	}
	g.Expect(MaskValues(secret, "pin 12")).To(Equal("pin 12"), "values under 4 bytes stay readable")
	configMap := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"token": "hunter2-long"}}
	g.Expect(MaskValues(configMap, "hunter2-long")).To(Equal("hunter2-long"))

	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "app", field.ErrorList{
		field.Invalid(field.NewPath("data"), "hunter2-long", "expected map")})
	masked := MaskError(secret, fmt.Errorf("applying: %w", invalid))
	g.Expect(masked.Error()).NotTo(ContainSubstring("hunter2-long"))
	g.Expect(apierrors.IsInvalid(masked)).To(BeTrue(), "the reason is kept")
}
