package imagescan

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

func TestMaxConcurrent(t *testing.T) {
	g := NewWithT(t)
	reg := testserver.NewRegistry(t, testserver.RegistryOptions{})
	const repos = 8
	for i := range repos {
		reg.PushImage(t, fmt.Sprintf("app%d", i), "main-1", epoch)
		reg.PushImage(t, fmt.Sprintf("app%d", i), "main-2", epoch.Add(time.Hour))
	}
	var inFlight, most atomic.Int64
	// Each request is held a little, so that unbounded callers would pile
	// up at the registry.
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		next.ServeHTTP(w, r)
	})
	s := New(Config{Addresses: allowLoopback, MaxConcurrent: 2, Clock: newClock()})

	var wg sync.WaitGroup
	results := make([]string, repos)
	errs := make([]error, repos)
	for i := range repos {
		wg.Go(func() {
			results[i], errs[i] = s.Newest(context.Background(), repository(t, host, fmt.Sprintf("app%d", i)), mustFilter(t, "main-*"), Options{})
		})
	}
	wg.Wait()
	for i := range repos {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(results[i]).To(Equal("main-2"))
	}
	g.Expect(most.Load()).To(BeNumerically(">=", 1))
	g.Expect(most.Load()).To(BeNumerically("<=", 2))
}
