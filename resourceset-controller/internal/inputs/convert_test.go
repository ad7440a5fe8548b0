package inputs_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rsv1 "github.com/sluice-gitops/sluice/resourceset-controller/api/v1"
	"github.com/sluice-gitops/sluice/resourceset-controller/internal/inputs"
)

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func TestFromAPI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []rsv1.ResourceSetInput
		want    []map[string]any
		wantErr string
	}{
		{
			name: "no inputs",
			in:   nil,
			want: []map[string]any{},
		},
		{
			name: "scalars",
			in: []rsv1.ResourceSetInput{{
				"name": raw(`"app"`), "enabled": raw(`true`), "nothing": raw(`null`), "unset": nil,
			}},
			want: []map[string]any{{"name": "app", "enabled": true, "nothing": nil, "unset": nil}},
		},
		{
			name: "whole numbers are int64, others float64",
			in: []rsv1.ResourceSetInput{{
				"replicas": raw(`3`), "negative": raw(`-42`), "big": raw(`9007199254740993`),
				"written as float": raw(`2.0`), "exponent": raw(`1e3`), "ratio": raw(`0.25`),
				"beyond int64": raw(`1e19`),
			}},
			want: []map[string]any{{
				"replicas": int64(3), "negative": int64(-42), "big": int64(9007199254740993),
				"written as float": int64(2), "exponent": int64(1000), "ratio": 0.25,
				"beyond int64": 1e19,
			}},
		},
		{
			name: "nested maps and lists",
			in: []rsv1.ResourceSetInput{
				{"app": raw(`{"image": {"tag": "1.2.3", "port": 8080}, "envs": ["dev", {"weight": 1.5, "n": 2}]}`)},
				{"app": raw(`{}`)},
			},
			want: []map[string]any{
				{"app": map[string]any{
					"image": map[string]any{"tag": "1.2.3", "port": int64(8080)},
					"envs":  []any{"dev", map[string]any{"weight": 1.5, "n": int64(2)}},
				}},
				{"app": map[string]any{}},
			},
		},
		{
			name:    "invalid JSON names the input and key",
			in:      []rsv1.ResourceSetInput{{"ok": raw(`1`)}, {"broken": raw(`{"a":`)}},
			wantErr: `input 1: value of "broken"`,
		},
		{
			name:    "trailing data",
			in:      []rsv1.ResourceSetInput{{"two": raw(`1 2`)}},
			wantErr: "unexpected data after the JSON value",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := inputs.FromAPI(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			// The values must be ones unstructured objects carry: DeepCopyJSONValue panics on
			// any other number type.
			for _, m := range got {
				g.Expect(func() { runtime.DeepCopyJSON(m) }).NotTo(Panic())
			}
		})
	}
}

func TestToAPIRoundTrip(t *testing.T) {
	g := NewWithT(t)
	in := []map[string]any{
		{"id": "a", "replicas": int64(2), "ratio": 0.5, "tags": []any{"x", int64(1)}, "meta": map[string]any{"k": "v"}, "none": nil},
		{},
	}
	api, err := inputs.ToAPI(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(api).To(HaveLen(2))
	g.Expect(string(api[0]["replicas"].Raw)).To(Equal("2"))
	g.Expect(string(api[0]["meta"].Raw)).To(Equal(`{"k":"v"}`))
	g.Expect(string(api[0]["none"].Raw)).To(Equal("null"))

	back, err := inputs.FromAPI(api)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back).To(Equal(in))

	_, err = inputs.ToAPI([]map[string]any{{"bad": make(chan int)}})
	g.Expect(err).To(MatchError(ContainSubstring(`input 0: value of "bad"`)))
}
