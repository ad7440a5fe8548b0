package controller

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	generatorv1 "github.com/sluice-gitops/sluice/manifest-generator/api/v1alpha1"
)

// hostileMessageTemplates run without end, or take gigabytes, without the limits of a message
// template; with them each fails at once, naming the limit.
var hostileMessageTemplates = []struct{ name, template, limit string }{
	{"a loop over a large integer", `{{range 2000000000}}x{{end}}`,
		"error calling range: a loop of 2000000000 iterations takes the commit message over the limit of 100000 loop iterations"},
	{"nested loops", `{{range 100000}}{{range 100000}}{{end}}{{end}}`,
		"error calling range: a loop of 100000 iterations takes the commit message over the limit of 100000 loop iterations"},
	{"a long message", `{{range 100000}}0123456789{{end}}`, "the rendered output is over the limit of 64 KiB per commit message"},
	{"a wide printf", `{{printf "%0100000000d" 0}}`, "error calling printf: width or precision 100000000 is over the limit of 10000"},
	{"a value doubled", `{{$s := .Name}}{{range 40}}{{$s = print $s $s}}{{end}}`,
		"error calling print: the results of template functions are over the limit of 1 MiB per commit message"},
	{"recursion", `{{define "r"}}{{template "r" .}}{{template "r" .}}{{end}}{{template "r" .}}`,
		"error calling template: a template call takes the commit message over the limit of 1000 template calls"},
}

// messageUpdate is a ManifestUpdate of the image of podinfo with a message template.
func messageUpdate(name, messageTemplate string) *generatorv1.ManifestUpdate {
	obj := &generatorv1.ManifestUpdate{}
	obj.Name, obj.Namespace = name, "default"
	obj.Spec.GenerationRef.Name = "apps"
	obj.Spec.Workload = "default:deployment/podinfo"
	obj.Spec.ContainerImage = &generatorv1.ContainerImageUpdate{Container: "app", Image: "ghcr.io/stefanprodan/podinfo:6.1.0"}
	obj.Spec.Git = &generatorv1.GitCommitSpec{MessageTemplate: messageTemplate}
	return obj
}

// A message template over its limits stalls the update (MessageTemplateOverLimit, the limit and
// what to fix in the message) before anything is cloned: nothing is committed or pushed, and
// the workers stay free, so the same update with a plain template then commits.
func TestManifestUpdateMessageTemplateLimits(t *testing.T) {
	g := NewWithT(t)
	f := newUpdateFixture(t, map[string]string{"apps/podinfo.yaml": podinfoDeployment})
	var keys []client.ObjectKey
	for i, tc := range hostileMessageTemplates[:2] {
		obj := messageUpdate("hostile-"+string(rune('a'+i)), tc.template)
		obj.Namespace = f.ns
		g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
		key := client.ObjectKeyFromObject(obj)
		g.Eventually(updateReady(key), timeout).Should(HavePrefix("False|MessageTemplateOverLimit|"), tc.name)
		msg := updateReady(key)(g)
		g.Expect(msg).To(ContainSubstring(tc.limit))
		g.Expect(msg).To(HaveSuffix("make spec.git.messageTemplate simpler: it may write 64 KiB, run 100000 loop iterations and 1000 template calls, within 1s"))
		stalled := conditions.Get(getUpdate(g, key), meta.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(generatorv1.MessageTemplateOverLimitReason))
		g.Eventually(eventsOf(key), timeout).Should(ContainElement(HavePrefix("Warning MessageTemplateOverLimit: spec.git.messageTemplate: ")))
		keys = append(keys, key)
	}
	g.Expect(f.head(t)).To(Equal(f.base), "nothing is pushed")

	// A plain template: committed with its message.
	obj := getUpdate(g, keys[1])
	obj.Spec.Git.MessageTemplate = "Release {{ .Spec.ContainerImage.Image }} ({{ .Name }})"
	g.Expect(k8s.Update(context.Background(), obj)).To(Succeed())
	g.Eventually(updateReady(keys[1]), timeout).Should(HavePrefix("True|Committed|"))
	g.Expect(git(t, f.repo.Dir, "log", "-1", "--format=%B", "refs/heads/master")).To(Equal("Release ghcr.io/stefanprodan/podinfo:6.1.0 (" + obj.Name + ")"))
}

// A template that does not parse or gives nothing is InvalidMessageTemplate, stalled.
func TestManifestUpdateInvalidMessageTemplate(t *testing.T) {
	for _, tc := range []struct{ template, err string }{
		{"{{ .Spec.Workload", `spec.git.messageTemplate: template: message:1: unclosed action`},
		{"{{ .Spec.Nope }}", `spec.git.messageTemplate: template: message:1:8: executing "message" at <.Spec.Nope>: can't evaluate field Nope`},
		{"{{/* nothing */}}  ", "spec.git.messageTemplate gives an empty message"},
	} {
		_, err := commitMessage(t.Context(), messageUpdate("invalid", tc.template))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.err)))
		NewWithT(t).Expect(messageReason(err)).To(Equal(generatorv1.InvalidMessageTemplateReason))
	}
}

// Hostile templates, rendered in the manager's process, fail naming their limit and allocate
// far less than the manager's own memory: 64 MiB for all of them together.
func TestCommitMessageMemory(t *testing.T) {
	g := NewWithT(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tc := range hostileMessageTemplates {
		_, err := commitMessage(t.Context(), messageUpdate("hostile", tc.template))
		g.Expect(err).To(MatchError(ContainSubstring(tc.limit)), tc.name)
		g.Expect(messageReason(err)).To(Equal(generatorv1.MessageTemplateOverLimitReason), tc.name)
	}
	runtime.ReadMemStats(&after)
	g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 64<<20), "bytes allocated")

	// The default template and a plain one are unchanged.
	msg, err := commitMessage(t.Context(), messageUpdate("plain", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal("Update default:deployment/podinfo container app to ghcr.io/stefanprodan/podinfo:6.1.0\n"))
	msg, err = commitMessage(t.Context(), messageUpdate("plain", `{{ printf "%s: %s" .Name .Spec.ContainerImage.Image | println }}{{ range $i := 3 }}{{ $i }}{{ end }}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal("plain: ghcr.io/stefanprodan/podinfo:6.1.0\n012\n"))
}

// The cancelled context of a stopping manager is no fault of the template: not terminal.
func TestCommitMessageCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := commitMessage(ctx, messageUpdate("plain", `{{range 10}}x{{end}}`))
	NewWithT(t).Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	NewWithT(t).Expect(messageReason(err)).To(Equal(generatorv1.ReconciliationFailedReason))
}

// BenchmarkCommitMessageHostile: how long the manager spends on each hostile template.
func BenchmarkCommitMessageHostile(b *testing.B) {
	for _, tc := range hostileMessageTemplates {
		b.Run(strings.ReplaceAll(tc.name, " ", "-"), func(b *testing.B) {
			obj := messageUpdate("hostile", tc.template)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := commitMessage(context.Background(), obj); err == nil {
					b.Fatal("no error")
				}
			}
		})
	}
}
