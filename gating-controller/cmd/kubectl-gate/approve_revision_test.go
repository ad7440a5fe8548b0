package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/sluice-gitops/sluice/gating-controller/api/v1alpha1"
)

// `kubectl gate open --revision` writes the revision of the request; `kubectl gate approve`
// responds for the revision of the pending request unless told another, and says so.
func TestOpenAndApproveARevision(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	installApprovalPolicy(t)
	gate := approvalGate(t, ns, "release")

	res := kubectlGate(t, "open", "release", "Ship 1.2", "--revision", "main@sha1:4f2c9e1", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(Equal("gate " + ns + `/release: open requested by sluice-admin: "Ship 1.2" (for revision main@sha1:4f2c9e1)` + "\n"))
	g.Expect(getGate(t, ns, "release").Annotations).To(HaveKeyWithValue("open.gate.fluxcd.io/revision", "main@sha1:4f2c9e1"))

	// A later open request without --revision removes the revision of the earlier one.
	res = kubectlGate(t, "open", "release", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(getGate(t, ns, "release").Annotations).NotTo(HaveKey("open.gate.fluxcd.io/revision"))

	// The controller made an open request for the revision pending, as of the last request
	// written (a response answers a newer request the controller has not seen yet).
	requested := getGate(t, ns, "release").Annotations["open.gate.fluxcd.io/requestedAt"]
	setStatus(t, gate, gatingv1alpha1.GateStatus{Approval: &gatingv1alpha1.GateApprovalStatus{
		State:   gatingv1alpha1.ApprovalPending,
		Pending: &gatingv1alpha1.GatePendingRequest{RequestedBy: "alice", RequestedAt: *at(requested), Revision: "main@sha1:4f2c9e1"},
	}})
	g.Eventually(func() int {
		res = kubectlGate(t, "approve", "release", "--as", "ana", "--as-group", "system:masters", "-n", ns)
		return res.exitCode
	}, 20*time.Second).Should(Equal(0))
	g.Expect(res.stderr).To(Equal("responding for revision main@sha1:4f2c9e1, the revision of the pending open request\n"))
	g.Expect(res.stdout).To(MatchRegexp(`^gate ` + ns + `/release: approved by ana for revision main@sha1:4f2c9e1 \(GateApproval release-[a-z0-9]+\)\n$`))

	res = kubectlGate(t, "approve", "release", "--revision", "main@sha1:0000000", "--as", "bo", "--as-group", "system:masters", "-n", ns)
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stderr).To(BeEmpty())

	list := &gatingv1alpha1.GateApprovalList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(ConsistOf(
		HaveField("Spec.Revision", "main@sha1:4f2c9e1"),
		HaveField("Spec.Revision", "main@sha1:0000000"),
	))
}
