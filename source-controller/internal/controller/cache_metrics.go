package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// cacheEvents counts the hits and misses of the Helm index cache under Flux's metric name,
// so an existing dashboard shows whether --helm-cache-max-size is large enough.
var cacheEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gotk_cache_events_total",
	Help: "Helm index cache events (cache_hit, cache_miss).",
}, []string{"event_type"})

func init() {
	metrics.Registry.MustRegister(cacheEvents)
}

// RecordCacheEvent is the index cache's Events hook.
func RecordCacheEvent(hit bool) {
	if hit {
		cacheEvents.WithLabelValues("cache_hit").Inc()
		return
	}
	cacheEvents.WithLabelValues("cache_miss").Inc()
}
