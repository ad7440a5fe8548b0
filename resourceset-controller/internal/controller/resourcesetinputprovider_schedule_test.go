package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluice-gitops/sluice/shared/testenv"
)

// spec.schedule, with the gating-controller's cron semantics: a provider fetches only inside
// its windows; outside them it exports nothing new, says when it fetches next
// (status.nextSchedule), and a forceAt equal to requestedAt fetches once anyway. A window
// shorter than twice the timeout stalls. A window open now fetches, and the next fetch waits for
// the next window when the interval would fall outside.
func TestInputProviderScheduleFetchesInsideItsWindows(t *testing.T) {
	g := NewWithT(t)
	ns := tenantNamespace(t)
	now := time.Now().UTC()
	// New Year's minute of next year, in UTC: certainly not now.
	newYear := time.Date(now.Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	provider := func(name, schedule string) client.ObjectKey {
		return client.ObjectKeyFromObject(rsipCreate(t, ns, fmt.Sprintf(`
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: %s
spec:
  type: Static
  defaultValues:
    env: staging
  schedule:
%s`, name, schedule)))
	}

	// Outside every window: nothing fetched, the next window named.
	outside := provider("outside", "    - cron: \"0 0 1 1 *\"\n      timeZone: UTC\n      window: 1h\n")
	g.Eventually(rsipCondition(outside, meta.ReadyCondition), timeout).Should(Equal(
		"False|SkippedDueToSchedule|outside its schedule: next fetch at " + newYear.Format(time.RFC3339)))
	obj := rsipGet(g, outside)
	g.Expect(obj.Status.ExportedInputs).To(BeEmpty())
	g.Expect(obj.Status.NextSchedule).NotTo(BeNil())
	g.Expect(obj.Status.NextSchedule.When.Time.Equal(newYear)).To(BeTrue(), "%s", obj.Status.NextSchedule.When)
	g.Expect(obj.Status.NextSchedule.Cron).To(Equal("0 0 1 1 *"))

	// Forced once: forceAt equal to requestedAt fetches outside the windows.
	testenv.Annotate(t, k8s, obj, meta.ReconcileRequestAnnotation, "force-1", meta.ForceRequestAnnotation, "force-1")
	obj = rsipReady(t, outside)
	g.Expect(rsipInputs(g, obj)[0]).To(HaveKeyWithValue("env", "staging"))
	g.Expect(obj.Status.LastHandledForceAt).To(Equal("force-1"))
	g.Expect(obj.Status.NextSchedule).NotTo(BeNil(), "the next fetch waits for the next window")

	// Inside a window (one that opens every minute for 15m): fetched; the interval stays inside.
	inside := provider("inside", "    - cron: \"* * * * *\"\n      window: 15m\n")
	obj = rsipReady(t, inside)
	g.Expect(obj.Status.ExportedInputs).To(HaveLen(1))
	g.Expect(obj.Status.NextSchedule).To(BeNil())

	// A 0s window fetches on any request, and comes back at its cron time.
	atTimes := provider("at-times", "    - cron: \"0 0 1 1 *\"\n")
	obj = rsipReady(t, atTimes)
	g.Expect(obj.Status.ExportedInputs).To(HaveLen(1))
	g.Expect(obj.Status.NextSchedule).NotTo(BeNil())
	g.Expect(obj.Status.NextSchedule.When.Time.Equal(newYear)).To(BeTrue())

	// A window shorter than twice the timeout (5m) could not hold a fetch.
	short := provider("short", "    - cron: \"0 9 * * *\"\n      window: 9m\n")
	g.Eventually(rsipCondition(short, meta.StalledCondition), timeout).Should(Equal(
		"True|InvalidSchedule|spec.schedule[0].window: 9m0s is shorter than twice the timeout (5m0s): a fetch could outlast it"))
	g.Eventually(rsipCondition(short, meta.ReadyCondition), timeout).Should(HavePrefix("False|InvalidSchedule|"))

	// A cron expression that does not parse stalls, naming the field.
	bad := provider("bad", "    - cron: \"0 25 * * *\"\n      window: 1h\n")
	g.Eventually(rsipCondition(bad, meta.StalledCondition), timeout).Should(HavePrefix(
		"True|InvalidSchedule|spec.schedule[0].cron: invalid cron expression '0 25 * * *'"))
}
