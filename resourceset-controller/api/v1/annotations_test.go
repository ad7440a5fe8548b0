package v1

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReconcileAnnotations(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		timeout     *metav1.Duration
		disabled    bool
		// interval and timeout of a ResourceSet, interval and timeout of a provider
		interval, rsetTimeout, providerInterval, providerTimeout time.Duration
	}{
		{name: "defaults", interval: time.Hour, rsetTimeout: 5 * time.Minute,
			providerInterval: 10 * time.Minute, providerTimeout: 5 * time.Minute},
		{name: "set", annotations: map[string]string{ReconcileAnnotation: EnabledValue,
			ReconcileEveryAnnotation: "30m", ReconcileTimeoutAnnotation: "1m30s"},
			interval: 30 * time.Minute, rsetTimeout: 90 * time.Second,
			providerInterval: 30 * time.Minute, providerTimeout: 90 * time.Second},
		{name: "disabled", annotations: map[string]string{ReconcileAnnotation: DisabledValue}, disabled: true,
			interval: time.Hour, rsetTimeout: 5 * time.Minute,
			providerInterval: 10 * time.Minute, providerTimeout: 5 * time.Minute},
		{name: "invalid durations fall back", annotations: map[string]string{
			ReconcileEveryAnnotation: "1 hour", ReconcileTimeoutAnnotation: "-5m"},
			interval: time.Hour, rsetTimeout: 5 * time.Minute,
			providerInterval: 10 * time.Minute, providerTimeout: 5 * time.Minute},
		{name: "zero falls back", annotations: map[string]string{
			ReconcileEveryAnnotation: "0s", ReconcileTimeoutAnnotation: "0"},
			interval: time.Hour, rsetTimeout: 5 * time.Minute,
			providerInterval: 10 * time.Minute, providerTimeout: 5 * time.Minute},
		{name: "provider spec.timeout wins", annotations: map[string]string{ReconcileTimeoutAnnotation: "1m"},
			timeout:  &metav1.Duration{Duration: 20 * time.Second},
			interval: time.Hour, rsetTimeout: time.Minute,
			providerInterval: 10 * time.Minute, providerTimeout: 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rset := &ResourceSet{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			g.Expect(rset.IsDisabled()).To(Equal(tc.disabled))
			g.Expect(rset.GetInterval()).To(Equal(tc.interval))
			g.Expect(rset.GetTimeout()).To(Equal(tc.rsetTimeout))

			rsip := &ResourceSetInputProvider{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations},
				Spec: ResourceSetInputProviderSpec{Timeout: tc.timeout}}
			g.Expect(rsip.IsDisabled()).To(Equal(tc.disabled))
			g.Expect(rsip.GetInterval()).To(Equal(tc.providerInterval))
			g.Expect(rsip.GetTimeout()).To(Equal(tc.providerTimeout))
		})
	}
}

func TestSpecDefaultsInGo(t *testing.T) {
	g := NewWithT(t)
	rset := &ResourceSet{}
	g.Expect(rset.GetInputStrategy()).To(Equal(InputStrategyFlatten))
	rset.Spec.InputStrategy = &InputStrategySpec{Name: InputStrategyPermute}
	g.Expect(rset.GetInputStrategy()).To(Equal(InputStrategyPermute))

	rsip := &ResourceSetInputProvider{}
	g.Expect(rsip.GetLimit()).To(Equal(DefaultInputLimit))
	rsip.Spec.Filter = &ResourceSetInputFilter{Limit: 5}
	g.Expect(rsip.GetLimit()).To(Equal(5))
}
