package v1alpha1

import (
	"bytes"
	"testing"
	"text/template"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-gitops/sluice/shared/gatesapi"
)

// Both kinds are gated objects for shared/gates.
var (
	_ gatesapi.Gated = &ManifestGeneration{}
	_ gatesapi.Gated = &ManifestUpdate{}
)

func TestManifestGenerationDefaultsInGo(t *testing.T) {
	g := NewWithT(t)
	mgen := &ManifestGeneration{}
	g.Expect(mgen.GetPath()).To(Equal("./"))
	g.Expect(mgen.GetTimeout(DefaultTimeout)).To(Equal(time.Minute))
	g.Expect(mgen.GetTimeout(5 * time.Minute)).To(Equal(5 * time.Minute))
	g.Expect(mgen.GetPrune()).To(BeTrue())

	prune := false
	mgen.Spec = ManifestGenerationSpec{Path: "staging", Prune: &prune,
		Interval: metav1.Duration{Duration: 5 * time.Minute}, Timeout: &metav1.Duration{Duration: 30 * time.Second}}
	g.Expect(mgen.GetPath()).To(Equal("staging"))
	g.Expect(mgen.GetTimeout(DefaultTimeout)).To(Equal(30 * time.Second))
	g.Expect(mgen.GetInterval()).To(Equal(5 * time.Minute))
	g.Expect(mgen.GetPrune()).To(BeFalse())
}

func TestManifestUpdateDefaultsInGo(t *testing.T) {
	g := NewWithT(t)
	mupd := &ManifestUpdate{}
	g.Expect(mupd.GetAuthor()).To(Equal(CommitAuthor{Name: "Sluice", Email: "sluice@localhost"}))
	g.Expect(mupd.GetMessageTemplate()).To(Equal(DefaultMessageTemplate))
	g.Expect(mupd.GetBranch()).To(BeEmpty())
	g.Expect(mupd.GetSigningKey()).To(BeNil())

	mupd.Spec.Git = &GitCommitSpec{Branch: "release", Author: &CommitAuthor{Name: "Bot"}, MessageTemplate: "bump"}
	g.Expect(mupd.GetAuthor()).To(Equal(CommitAuthor{Name: "Bot", Email: "sluice@localhost"}))
	g.Expect(mupd.GetMessageTemplate()).To(Equal("bump"))
	g.Expect(mupd.GetBranch()).To(Equal("release"))
}

// The default commit message template renders both kinds of change on one line.
func TestDefaultMessageTemplate(t *testing.T) {
	tmpl := template.Must(template.New("message").Option("missingkey=error").Parse(DefaultMessageTemplate))
	value := "true"
	cases := []struct {
		name string
		spec ManifestUpdateSpec
		want string
	}{
		{name: "image", want: "Update default:deployment/foo container app to nginx:1.15",
			spec: ManifestUpdateSpec{Workload: "default:deployment/foo",
				ContainerImage: &ContainerImageUpdate{Container: "app", Image: "nginx:1.15"}}},
		{name: "policies", want: "Update policies of default:deployment/foo: automated=true, locked removed",
			spec: ManifestUpdateSpec{Workload: "default:deployment/foo",
				Policies: []PolicyChange{{Name: "automated", Value: &value}, {Name: "locked"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			g.Expect(tmpl.Execute(&out, &ManifestUpdate{Spec: tc.spec})).To(Succeed())
			g.Expect(out.String()).To(Equal(tc.want))
		})
	}
}
