package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// hostileValues are annotation values a controller must survive: empty, blank, control
// characters, times and durations out of range or malformed, numbers that overflow, markup,
// templates, paths, a right-to-left override, and 60 KB.
var hostileValues = []string{
	"", " ", "\x00\x01\x7f", "not-a-time", "2026-13-45T99:99:99Z", "0000-00-00T00:00:00Z", "-1h", "1e309h",
	"9223372036854775807h", "99999999999999999999", "-9223372036854775808", "NaN", "0x7fffffff", "1.5.3",
	`{"json": [1, {"deep": null}]}`, "<script>alert(1)</script>", "${HOME}{{ .Secret }}<< inputs.x >>", "%n%s%s%s",
	"../../etc/passwd", "a/b/c/d/e", ",,,,", "\u202egnp.exe", strings.Repeat("a,", 30000),
}

// hostileAnnotations are the annotations Sluice's controllers read, on the kinds they read them
// from.
var hostileAnnotations = map[string][]string{
	"Gate": {"open.gate.fluxcd.io/requestedAt", "close.gate.fluxcd.io/requestedAt", "open.gate.fluxcd.io/duration",
		"close.gate.fluxcd.io/duration", "open.gate.fluxcd.io/revision", "open.gate.fluxcd.io/reason",
		"reconcile.fluxcd.io/requestedAt"},
	// The gates annotation is read the same way on Flux's Kustomizations and HelmReleases
	// (shared/gatesapi.ParseGatesAnnotation, which FuzzParseGatesAnnotation fuzzes); their CRDs
	// are installed by the Flux scenarios only.
	"GitRepository": {"gating.toolkit.fluxcd.io/gates", "reconcile.fluxcd.io/requestedAt", "gating.toolkit.fluxcd.io/held-since",
		"gating.toolkit.fluxcd.io/suspended"},
	"ResourceSet": {"fluxcd.controlplane.io/reconcileEvery", "fluxcd.controlplane.io/reconcileTimeout",
		"fluxcd.controlplane.io/reconcile", "fluxcd.controlplane.io/force", "reconcile.fluxcd.io/requestedAt"},
	"ManifestGeneration": {"reconcile.fluxcd.io/requestedAt", "gating.toolkit.fluxcd.io/gates"},
}

const hostileObjects = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: hostile
spec:
  default: closed
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: hostile
spec:
  interval: 1m
  url: https://git.example.invalid/hostile.git
  ref:
    branch: main
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: hostile
spec:
  serviceAccountName: applier
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: hostile
      data:
        a: "1"
---
apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: hostile
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: hostile
  interval: 1m
`

// Replays Argo Workflows' CVE-2026-40886 (a malformed annotation crashed the controller): every
// annotation Sluice reads (gate requests, gates on Flux objects, the ResourceSet's, reconcile
// requests), on the objects the four controllers watch, takes each hostile value in turn; no
// controller process exits or restarts, and each still reconciles a good object afterwards. The
// workload policies of the automation (fluxcd.io/tag.*, minimum-age, digest, verify) are read
// from generated manifests: their parsers have fuzz targets (manifest-generator's workload and
// imagescan packages), and a bad one is a condition (TestAutomationInvalidFilter). Not parallel:
// other scenarios restart controllers on purpose.
//
// Checked against a reintroduced bug: with a panic on an unparsable duration in the gating
// controller's open request parsing (controller-runtime recovers panics in reconcilers, so the
// check is a `log.Fatal` there), the gating-controller exits and this test fails.
func TestScenarioHostileAnnotationsCrashNoController(t *testing.T) {
	s := newScenario(t, "hostile-annotations")
	g := s.g
	ctx := context.Background()
	pids := map[string]int{}
	for _, c := range sys.Controllers {
		pids[c.Name] = c.Pid()
	}
	objs := s.create(hostileObjects)
	// A gate request names who makes it (the requested-by admission policy): the test's user.
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(k8s().Create(ctx, review)).To(Succeed())
	user := review.Status.UserInfo.Username
	written, refused := 0, 0
	reached := map[string]int{} // kind/annotation -> values written
	// Each annotation takes each value in turn while the others of its object are valid, so that
	// the parsing gets as far as the annotation under test: a new gate request each time.
	valid := func(kind string) map[string]string {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		switch kind {
		case "Gate":
			return map[string]string{"open.gate.fluxcd.io/requestedAt": now, "open.gate.fluxcd.io/requestedBy": user,
				"open.gate.fluxcd.io/duration": "1h", "open.gate.fluxcd.io/reason": "test", "open.gate.fluxcd.io/revision": "main@sha1:abc",
				"close.gate.fluxcd.io/requestedAt": now, "close.gate.fluxcd.io/requestedBy": user, "close.gate.fluxcd.io/duration": "1h",
				"reconcile.fluxcd.io/requestedAt": now}
		case "GitRepository":
			return map[string]string{"gating.toolkit.fluxcd.io/gates": "hostile", "reconcile.fluxcd.io/requestedAt": now}
		case "ResourceSet":
			return map[string]string{"fluxcd.controlplane.io/reconcileEvery": "1m", "fluxcd.controlplane.io/reconcileTimeout": "1m",
				"reconcile.fluxcd.io/requestedAt": now}
		}
		return map[string]string{"reconcile.fluxcd.io/requestedAt": now}
	}
	for _, obj := range objs {
		for _, key := range hostileAnnotations[obj.GetKind()] {
			for _, v := range hostileValues {
				cur := &unstructured.Unstructured{}
				cur.SetGroupVersionKind(obj.GroupVersionKind())
				g.Expect(k8s().Get(ctx, client.ObjectKeyFromObject(obj), cur)).To(Succeed())
				ann := valid(obj.GetKind())
				ann[key] = v
				cur.SetAnnotations(ann)
				// Admission may refuse a value (the size limit, the requested-by policy): what it
				// takes reaches the controllers.
				if err := k8s().Update(ctx, cur); err != nil {
					refused++
					continue
				}
				written++
				reached[obj.GetKind()+"/"+key]++
				time.Sleep(20 * time.Millisecond) // let the informers deliver each value
			}
		}
	}
	t.Logf("%d hostile annotation values written, %d refused by admission", written, refused)
	for kind, keys := range hostileAnnotations {
		for _, key := range keys {
			g.Expect(reached[kind+"/"+key]).To(BeNumerically(">=", 3), "hostile values of %s on a %s reached no controller", key, kind)
		}
	}

	g.Consistently(func(g Gomega) {
		for _, c := range sys.Controllers {
			g.Expect(c.Exited()).To(BeFalse(), "%s exited", c.Name)
			g.Expect(c.Pid()).To(Equal(pids[c.Name]), "%s restarted", c.Name)
		}
	}, 5*time.Second, 250*time.Millisecond).Should(Succeed())

	// Still reconciling: a good ResourceSet beside them is applied.
	s.create(`apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: after
spec:
  serviceAccountName: applier
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: after
      data:
        ok: "true"
`)
	settled(g, resourceSetGVK, s.ns, "after", HavePrefix("True|"), nil)
}
