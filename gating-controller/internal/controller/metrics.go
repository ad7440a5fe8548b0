package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	gateOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gate_open",
		Help: "1 when the gate is opened, 0 when it is closed.",
	}, []string{"namespace", "name"})

	gateTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gate_transitions_total",
		Help: "Changes of state of the gate, by the state it changed to.",
	}, []string{"namespace", "name", "state"})
)

func init() {
	metrics.Registry.MustRegister(gateOpen, gateTransitions)
}

// forgetGateMetrics drops the series of a deleted gate.
func forgetGateMetrics(namespace, name string) {
	gateOpen.DeleteLabelValues(namespace, name)
	gateTransitions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}
