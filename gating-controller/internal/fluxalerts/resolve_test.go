package fluxalerts

import (
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	notificationv1beta3 "github.com/sluice-gitops/sluice/gating-controller/api/notification/v1beta3"
)

// An Alert's lists filter on the message; a list that does not compile is an error naming it.
func TestFiltered(t *testing.T) {
	g := NewWithT(t)
	alert := &notificationv1beta3.Alert{Spec: notificationv1beta3.AlertSpec{
		InclusionList: []string{"^stored", "failed"}, ExclusionList: []string{"garbage"}}}
	for msg, want := range map[string]bool{
		"stored artifact for revision 'x'": true, "checkout failed": true, "stored garbage": false, "other": false,
	} {
		got, err := filtered(alert, msg)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want), msg)
	}
	_, err := filtered(&notificationv1beta3.Alert{Spec: notificationv1beta3.AlertSpec{ExclusionList: []string{"("}}}, "x")
	g.Expect(err).To(MatchError(ContainSubstring("spec.exclusionList[0] is not a regular expression")))
}

// The metadata sent is Flux's: the keys of the object's API group and of event.toolkit.fluxcd.io,
// without their prefix or the checksum, then the Alert's, which never replace the event's.
func TestWithMetadata(t *testing.T) {
	g := NewWithT(t)
	ev := eventv1.Event{InvolvedObject: corev1.ObjectReference{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "GitRepository"},
		Metadata: map[string]string{
			"source.toolkit.fluxcd.io/revision": "main@sha1:abc", "source.toolkit.fluxcd.io/checksum": "x",
			"event.toolkit.fluxcd.io/token": "deploy-7", "other.io/key": "dropped",
		}}
	alert := &notificationv1beta3.Alert{Spec: notificationv1beta3.AlertSpec{Summary: "prod",
		EventMetadata: map[string]string{"cluster": "eu", "revision": "not this"}}}
	got := withMetadata(alert, ev)
	g.Expect(got.Metadata).To(Equal(map[string]string{"revision": "main@sha1:abc", "token": "deploy-7", "cluster": "eu", "summary": "prod"}))
	g.Expect(ev.Metadata).To(HaveLen(4), "the received event is not changed")
}
