package v1alpha1

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseWorkload(t *testing.T) {
	cases := []struct {
		in   string
		want Workload
		err  bool
	}{
		{in: "default:deployment/foo", want: Workload{Namespace: "default", Kind: "deployment", Name: "foo"}},
		{in: "kube-system:DaemonSet/node.exporter-1", want: Workload{Namespace: "kube-system", Kind: "DaemonSet", Name: "node.exporter-1"}},
		{in: "foo", err: true},
		{in: "default:deployment", err: true},
		{in: "deployment/foo", err: true},
		{in: ":deployment/foo", err: true},
		{in: "default:/foo", err: true},
		{in: "default:deployment/", err: true},
		{in: "Default:deployment/foo", err: true},
		{in: "default:deployment/foo/bar", err: true},
		{in: "default:deploy-ment/foo", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseWorkload(tc.in)
			if tc.err {
				g.Expect(err).To(MatchError(ContainSubstring("is not <namespace>:<kind>/<name>")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			g.Expect(got.String()).To(Equal(tc.in))
		})
	}
}
