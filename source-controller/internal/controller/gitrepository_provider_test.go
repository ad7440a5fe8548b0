package controller

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"

	sourcev1 "github.com/sluice-gitops/sluice/source-controller/api/v1"
)

// A provider that needs a cloud identity (aws, azure, github) stalls at once, with the message
// of every source kind, before any connection to the remote; generic is the default.
func TestGitRepositoryCloudProviderStalls(t *testing.T) {
	ns := env.Namespace(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	var connections atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			c.Close()
		}
	}()
	for _, provider := range []string{"aws", "azure", "github"} {
		t.Run(provider, func(t *testing.T) {
			g := NewWithT(t)
			spec := sourcev1.GitRepositorySpec{URL: "http://" + ln.Addr().String() + "/repo.git", Provider: provider}
			if provider != "github" {
				spec.ServiceAccountName = "workload" // allowed with aws and azure only
			}
			key := createRepo(t, ns, provider, spec)
			msg := "provider '" + provider + "' needs a cloud identity, which this source-controller does not obtain: " +
				"use provider generic with credentials in Secrets"
			g.Eventually(condition(key, meta.StalledCondition), timeout).Should(Equal("True|AuthenticationFailed|" + msg))
			g.Expect(condition(key, sourcev1.FetchFailedCondition)(g)).To(Equal("True|AuthenticationFailed|" + msg))
			g.Expect(condition(key, meta.ReadyCondition)(g)).To(Equal("False|AuthenticationFailed|" + msg))
			g.Expect(getRepo(g, key).Status.Artifact).To(BeNil())
		})
	}
	NewWithT(t).Expect(connections.Load()).To(BeZero(), "no connection to the remote")
}
