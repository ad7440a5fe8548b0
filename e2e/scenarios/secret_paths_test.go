package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secret data through other paths (issue 44): the regression suite of Argo CD's advisories in
// which Secret values left the cluster through a side door rather than through the Secret itself:
//
//   - CVE-2026-42880 and CVE-2026-45737 (CVSS 9.6): Secret values in the diff output and in the
//     errors of a sync;
//   - CVE-2025-23216: the values of an invalid Secret, quoted by the error of its apply, shown in
//     the status and the UI;
//   - CVE-2025-55190: credentials served by an API (the project's) to whoever could read it.
//
// The same classes in Sluice: a Secret's bytes must never reach a status (ResourceSets,
// ManifestGenerations, ManifestUpdates, Gates, GitRepositories, providers' exportedInputs...), an
// event, a controller's log, the JSON of the dashboard (`kubectl gate ui`), the output of
// `kubectl resourceset build --diff`, a ManifestUpdate's verification message, or the payload of
// a GateNotification or of a Flux Alert. With a random canary in every Secret value, the scenario
// feeds Secrets into every path it can:
//
//   - invalid Secrets, each applied by a ResourceSet (rs-<kind>) and by a ManifestGeneration from
//     Git (mg-<kind>), refused by the API server: data that is not base64, an invalid key, a
//     kubernetes.io/tls Secret without tls.key, a docker config that is not JSON, data that is
//     not a map, stringData that is not a string, a change of an immutable Secret and of a
//     Secret's type (both Secrets created by kubectl), a Secret over 1 MiB;
//   - Secrets created client-side by kubectl (their kubectl.kubernetes.io/last-applied-
//     configuration annotation holds the data), then managed by a ResourceSet and by a
//     ManifestGeneration, or only compared by `kubectl resourceset build --diff`;
//   - a Secret read as a ResourceSet's inputs (and written, not base64, into a Secret the API
//     server refuses), copied by copyFrom into a kubernetes.io/tls Secret it refuses, a
//     kubeconfig converted into a ConfigMap (and one that does not parse), a readyExpr over a
//     Secret that fails on a value (a ResourceSet's dependsOn, a Gate's checks);
//   - Secrets as credentials: an ExternalService's bearer token (one service answers, one refuses
//     and echoes the request), Git credentials the Git server refuses (a GitRepository, a
//     GitBranch provider), the addresses and HMAC key of GateNotifications and of a Flux Provider;
//   - a ManifestUpdate whose updater also changes a Secret: its verification fails.
//
// Once everything has settled, failures included, it searches every surface it can collect for
// the canary, in every form (secretCanary.forms). Two holes were found, and fixed:
//
//   - the API server quotes, in the errors of a server-side apply (and of its dry-run), the
//     values it cannot decode (`.data: expected map, got &{<value>}`, `.stringData.token:
//     expected string, got ...{"<value>"}`): they reached the status, the events, the logs, the
//     Alerts and the diff's stderr. shared/apply and kubectl-resourceset now write through
//     secrets.MaskingClient, which masks a Secret's values in those errors (`&{***}`);
//   - CEL quotes the value it fails on (`no such key: <value>`): a readyExpr over a Secret put
//     its data in a ResourceSet's status, a Gate's status and history, the dashboard and the
//     GateNotifications. shared/dependency masks a Secret's values in the message.

// secretCanary is the random value the scenario's Secrets hold. Its core is random hex, which
// every text encoding keeps as it is (JSON with or without HTML escaping, Go's %q, YAML, a URL);
// around it, characters that each encoder escapes its own way (<, &, ", \, >), so that a value
// that reaches a surface through an encoder is still the value. The Secrets hold variants of it
// (the value kubectl applied, the value a ResourceSet or a ManifestGeneration applies...), all
// with the same core.
type secretCanary struct {
	core string
}

func newSecretCanary(t testing.TB) secretCanary {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return secretCanary{core: hex.EncodeToString(b)}
}

// value is the variant named v of the canary.
func (c secretCanary) value(v string) string { return `<&"sluice-` + v + `-` + c.core + `"\>` }

// forms are the strings whose presence in a text means a Secret's bytes are in it, by name: the
// core (the value as it is, JSON-escaped, quoted, in a URL), the JSON-escaped forms of the whole
// values (with and without Go's HTML escaping), and the base64 of any string that holds the core,
// at any of the three alignments and in both alphabets (a Secret's data, kubectl's
// last-applied-configuration, a docker config's auth).
func (c secretCanary) forms(variants ...string) map[string]string {
	forms := map[string]string{"core": c.core}
	for _, v := range variants {
		value := c.value(v)
		forms["json("+v+")"] = strings.Trim(jsonString(value, true), `"`)
		forms["json-no-html("+v+")"] = strings.Trim(jsonString(value, false), `"`)
		forms["quoted("+v+")"] = strings.Trim(strconv.Quote(value), `"`)
	}
	for shift := 0; shift < 3; shift++ {
		// The groups of 4 characters that encode only bytes of the core are the same in the
		// base64 of any string holding the core at this alignment.
		raw := append(make([]byte, shift), c.core...)
		first := (shift + 2) / 3
		last := (shift + len(c.core) - 3) / 3
		for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "base64url": base64.URLEncoding} {
			forms[fmt.Sprintf("%s+%d", name, shift)] = enc.EncodeToString(raw)[4*first : 4*(last+1)]
		}
	}
	return forms
}

// leaks returns the forms of the canary found in text, sorted, and the text around the first
// one found: none when text holds no Secret byte of the scenario.
func (c secretCanary) leaks(text string) (forms []string, context string) {
	first := -1
	for name, form := range c.forms("kubectl", "applied", "diff") {
		if i := strings.Index(text, form); i >= 0 {
			forms = append(forms, name)
			if first < 0 || i < first {
				first = i
				from, to := max(0, i-300), min(len(text), i+len(form)+100)
				context = "…" + text[from:to] + "…"
			}
		}
	}
	sort.Strings(forms)
	return forms, context
}

// jsonString is s as a JSON string, with Go's HTML escaping (<, >, & as \u003c...) or without.
func jsonString(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// secretPathsSecrets are the Secrets the ResourceSets, ManifestGenerations, providers, the gate
// and the notifications read, created by the test (not by kubectl).
func (s *scenario) secretPathsSecrets(c secretCanary, endpoint string) {
	s.t.Helper()
	applied := c.value("applied")
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: remote
  cluster:
    server: https://remote.example:6443
    certificate-authority-data: ` + b64("-----BEGIN CERTIFICATE-----\nnot a secret\n-----END CERTIFICATE-----\n") + `
users:
- name: admin
  user:
    token: ` + jsonString(applied, false) + `
contexts:
- name: remote
  context:
    cluster: remote
    user: admin
current-context: remote
`
	for _, secret := range []*corev1.Secret{
		// Read as inputs, copied, checked by CEL, and the bearer token of an ExternalService.
		{ObjectMeta: metav1.ObjectMeta{Name: "source-token", Labels: map[string]string{"app": "secret-paths"}},
			StringData: map[string]string{"token": applied, "username": "bot", "password": applied}},
		// A kubeconfig whose cluster a ResourceSet converts into a ConfigMap: the user's token
		// must stay behind.
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig"}, StringData: map[string]string{"kubeconfig": kubeconfig}},
		// A kubeconfig that does not parse: clusters is the token, not a list.
		{ObjectMeta: metav1.ObjectMeta{Name: "broken-kubeconfig"},
			StringData: map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\nclusters: " + jsonString(applied, false) + "\n"}},
		// Git credentials the Git server refuses.
		{ObjectMeta: metav1.ObjectMeta{Name: "git-refused"}, StringData: map[string]string{"username": gitUser, "password": applied}},
		// The addresses of the notifications and of the Flux Provider are credentials (a Slack
		// webhook URL): the core is in their paths. token is the HMAC key of generic-hmac.
		{ObjectMeta: metav1.ObjectMeta{Name: "notify-hmac"},
			StringData: map[string]string{"address": endpoint + "/hook/" + c.core, "token": applied}},
		{ObjectMeta: metav1.ObjectMeta{Name: "notify-slack"}, StringData: map[string]string{"address": endpoint + "/slack/" + c.core}},
		{ObjectMeta: metav1.ObjectMeta{Name: "notify-refused"}, StringData: map[string]string{"address": endpoint + "/refuse/" + c.core}},
		{ObjectMeta: metav1.ObjectMeta{Name: "alert-provider"}, StringData: map[string]string{"address": endpoint + "/alert/" + c.core}},
	} {
		secret.Namespace = s.ns
		s.g.Expect(k8s().Create(context.Background(), secret)).To(Succeed(), "Secret %s", secret.Name)
	}
}

// kubectlSecrets are applied client-side with kubectl, as a user does before handing them to
// GitOps: their kubectl.kubernetes.io/last-applied-configuration annotation holds their data
// (base64) and their stringData (as it is).
const kubectlSecrets = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-rs
    namespace: __NS__
  data:
    token: __B64_KUBECTL__
  stringData:
    password: __KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-mg
    namespace: __NS__
  data:
    token: __B64_KUBECTL__
  stringData:
    password: __KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-diff
    namespace: __NS__
  data:
    token: __B64_KUBECTL__
  stringData:
    password: __KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-immutable-rs
    namespace: __NS__
  immutable: true
  data:
    token: __B64_KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-immutable-mg
    namespace: __NS__
  immutable: true
  data:
    token: __B64_KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-type-rs
    namespace: __NS__
  data:
    token: __B64_KUBECTL__
- apiVersion: v1
  kind: Secret
  metadata:
    name: kubectl-type-mg
    namespace: __NS__
  data:
    token: __B64_KUBECTL__
`

// invalidSecrets are the Secrets the API server refuses, each in a way whose message could quote
// the value, by name: a ResourceSet rs-<name> and a ManifestGeneration mg-<name> each apply one.
// __VALUE__ is the canary (JSON-quoted), __B64__ its base64.
var invalidSecrets = map[string]string{
	// data values are base64: the canary is not.
	"bad-base64": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
data:
  token: __VALUE__
`,
	// A key with a space and a "!".
	"bad-key": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
data:
  "bad key!": __B64__
`,
	// kubernetes.io/tls needs tls.crt and tls.key.
	"tls-missing-key": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
type: kubernetes.io/tls
data:
  tls.crt: __B64__
`,
	// A kubernetes.io/dockerconfigjson whose .dockerconfigjson is not JSON.
	"bad-dockerconfig": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: __B64_BROKEN_JSON__
`,
	// data is a string, not a map: refused by the API server's typed conversion.
	"data-not-a-map": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
data: __VALUE__
`,
	// stringData values are strings, not lists.
	"stringdata-list": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
stringData:
  token:
  - __VALUE__
`,
	// A change of an immutable Secret kubectl created (kubectl-immutable-rs, -mg).
	"immutable": `apiVersion: v1
kind: Secret
metadata:
  name: kubectl-immutable-__WHO__
  namespace: __NS__
immutable: true
data:
  token: __B64__
`,
	// A change of the type of a Secret kubectl created (kubectl-type-rs, -mg).
	"type-change": `apiVersion: v1
kind: Secret
metadata:
  name: kubectl-type-__WHO__
  namespace: __NS__
type: kubernetes.io/basic-auth
data:
  username: __B64__
  password: __B64__
`,
	// Over the 1 MiB of a Secret: the canary repeated.
	"too-large": `apiVersion: v1
kind: Secret
metadata:
  name: __NAME__
  namespace: __NS__
data:
  token: __B64_LARGE__
`,
}

// tooLargeRepeat repeats the canary past the 1 MiB a Secret may hold.
const tooLargeRepeat = 22000

// invalidSecret is invalidSecrets[kind] for who ("rs" or "mg"), with the canary variant
// "applied".
func invalidSecret(c secretCanary, kind, who string) string {
	value := c.value("applied")
	large := ""
	if kind == "too-large" {
		large = b64(strings.Repeat(value, tooLargeRepeat))
	}
	return strings.NewReplacer("__NAME__", who+"-"+kind, "__WHO__", who, "__VALUE__", jsonString(value, false),
		"__B64_BROKEN_JSON__", b64(`{"auths": {"registry.example": {"auth": `+jsonString(value, false)),
		"__B64_LARGE__", large, "__B64__", b64(value)).Replace(invalidSecrets[kind])
}

// resourceSetOf is a ResourceSet applying one resource (YAML at the indentation of a list item
// of spec.resources) as the applier account, with extra spec fields.
func resourceSetOf(name, extra, resource string) string {
	var r strings.Builder
	for i, l := range strings.Split(strings.TrimRight(resource, "\n"), "\n") {
		if i == 0 {
			r.WriteString("  - " + l + "\n")
		} else {
			r.WriteString("    " + l + "\n")
		}
	}
	return `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: ` + name + `
spec:
  serviceAccountName: applier
` + extra + `  resources:
` + r.String()
}

// secretPathsResourceSets are the ResourceSets of the scenario, by name, in the namespace ns,
// with the Secret values of the canary variant value (the diff renders them with another).
func secretPathsResourceSets(c secretCanary, ns, variant string) map[string]string {
	value := c.value(variant)
	sets := map[string]string{
		// Valid Secrets: one of its own, and kubectl-rs, which kubectl created client-side and
		// the ResourceSet now manages.
		"rs-valid": `apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: rs-valid
spec:
  serviceAccountName: applier
  gates:
    refs: [notified]
  resources:
  - apiVersion: v1
    kind: Secret
    metadata:
      name: rs-valid
      namespace: __NS__
    data:
      token: ` + b64(value) + `
  - apiVersion: v1
    kind: Secret
    metadata:
      name: kubectl-rs
      namespace: __NS__
      labels:
        managed-by: rs-valid
    data:
      token: ` + b64(value) + `
`,
		// A Secret read as the input, written into data without b64enc: the API server refuses
		// a value that is not base64.
		"rs-input-secret": resourceSetOf("rs-input-secret", `  inputsFrom:
  - kind: Secret
    name: source-token
`, `apiVersion: v1
kind: Secret
metadata:
  name: rs-input-secret
  namespace: __NS__
data:
  token: << inputs.token | quote >>
`),
		// A kubernetes.io/tls Secret copying the data of an Opaque one (copyFrom): no tls.crt.
		"rs-copy-tls": resourceSetOf("rs-copy-tls", "", `apiVersion: v1
kind: Secret
type: kubernetes.io/tls
metadata:
  name: rs-copy-tls
  namespace: __NS__
  annotations:
    fluxcd.controlplane.io/copyFrom: __NS__/source-token
`),
		// A ConfigMap that gets the address and CA of a kubeconfig Secret: not its user's token.
		"rs-kubeconfig": resourceSetOf("rs-kubeconfig", "", `apiVersion: v1
kind: ConfigMap
metadata:
  name: rs-kubeconfig
  namespace: __NS__
  annotations:
    fluxcd.controlplane.io/convertKubeConfigFrom: __NS__/kubeconfig
`),
		// The same from a kubeconfig that does not parse.
		"rs-broken-kubeconfig": resourceSetOf("rs-broken-kubeconfig", "", `apiVersion: v1
kind: ConfigMap
metadata:
  name: rs-broken-kubeconfig
  namespace: __NS__
  annotations:
    fluxcd.controlplane.io/convertKubeConfigFrom: __NS__/broken-kubeconfig
`),
		// A readyExpr over a Secret of the ResourceSet's namespace, which it may read, whose
		// evaluation fails on a value: the failure must not quote it.
		"rs-depends": resourceSetOf("rs-depends", `  dependsOn:
  - apiVersion: v1
    kind: Secret
    name: source-token
    readyExpr: metadata.labels[data.token] == 'ready'
`, `apiVersion: v1
kind: ConfigMap
metadata:
  name: rs-depends
  namespace: __NS__
`),
	}
	for kind := range invalidSecrets {
		if kind == "too-large" {
			continue
		}
		secret := invalidSecret(c, kind, "rs")
		if variant != "applied" {
			secret = strings.ReplaceAll(secret, jsonString(c.value("applied"), false), jsonString(value, false))
			secret = strings.ReplaceAll(secret, b64(c.value("applied")), b64(value))
		}
		sets["rs-"+kind] = resourceSetOf("rs-"+kind, "", secret)
	}
	// The too-large Secret is rendered by the template rather than written out: the ResourceSet
	// itself would be over the 1.5 MiB etcd stores.
	sets["rs-too-large"] = resourceSetOf("rs-too-large", "", `apiVersion: v1
kind: Secret
metadata:
  name: rs-too-large
  namespace: __NS__
data:
  token: `+jsonString(fmt.Sprintf("<< repeat %d `%s` | b64enc >>", tooLargeRepeat, value), false)+`
`)
	for name, set := range sets {
		sets[name] = strings.ReplaceAll(set, "__NS__", ns)
	}
	return sets
}

// secretPathsRepo are the files of the ManifestGenerations' repository: a directory per
// ManifestGeneration, raw YAML, and update/, generated by kustomize (.flux.yaml), whose updater
// also changes a Secret.
func secretPathsRepo(c secretCanary, ns string) map[string]string {
	applied := c.value("applied")
	files := map[string]string{
		"valid/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: mg-valid
data:
  token: ` + b64(applied) + `
---
apiVersion: v1
kind: Secret
metadata:
  name: kubectl-mg
  labels:
    managed-by: mg-valid
data:
  token: ` + b64(applied) + `
`,
		"update/.flux.yaml": `version: 1
commandUpdated:
  generators:
    - command: kustomize build .
  updaters:
    - containerImage:
        command: kustomize edit set image "$FLUX_IMG:$FLUX_TAG" && sed -i 's|` + b64(applied) + `|` + b64(c.value("kubectl")) + `|' secret.yaml
`,
		"update/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: ` + ns + `
resources:
  - deployment.yaml
  - secret.yaml
`,
		"update/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
    spec:
      containers:
        - name: app
          image: ghcr.io/example/app:1.0.0
`,
		"update/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: update-secret
data:
  token: ` + b64(applied) + `
`,
	}
	for kind := range invalidSecrets {
		files["invalid-"+kind+"/secret.yaml"] = strings.ReplaceAll(invalidSecret(c, kind, "mg"), "__NS__", ns)
	}
	return files
}

// manifestGenerationOf reads path of the secret-paths GitRepository.
func manifestGenerationOf(name, path, extra string) string {
	return `apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestGeneration
metadata:
  name: ` + name + `
spec:
  serviceAccountName: applier
  sourceRef:
    kind: GitRepository
    name: secret-paths
  path: ./` + path + `
  interval: 10m
` + extra
}

const secretPathsSources = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: secret-paths
spec:
  interval: 1m
  url: __GIT__
  ref:
    branch: master
  secretRef:
    name: git-credentials
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: refused
spec:
  interval: 1m
  url: __GIT__
  secretRef:
    name: git-refused
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: service
spec:
  type: ExternalService
  url: __ENDPOINT__/inputs
  insecure: true
  secretRef:
    name: source-token
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: service-refuses
spec:
  type: ExternalService
  url: __ENDPOINT__/echo
  insecure: true
  secretRef:
    name: source-token
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: git-refused
spec:
  type: GitBranch
  url: __GIT__
  secretRef:
    name: git-refused
`

// secretPathsNotifications are the gate whose events are posted, the GateNotifications that post
// them, and a Flux Provider and Alert that post the events of the other controllers.
const secretPathsNotifications = `apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: Gate
metadata:
  name: notified
spec:
  default: opened
  serviceAccountName: applier
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateNotification
metadata:
  name: hmac
spec:
  gates: [notified]
  events: [Opened, Closed, KeeperFailed]
  type: generic-hmac
  secretRef:
    name: notify-hmac
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateNotification
metadata:
  name: slack
spec:
  gates: [notified]
  events: [Opened, Closed, KeeperFailed]
  type: slack
  secretRef:
    name: notify-slack
---
apiVersion: gating.toolkit.fluxcd.io/v1alpha1
kind: GateNotification
metadata:
  name: refused
spec:
  gates: [notified]
  events: [Opened, Closed]
  type: generic
  secretRef:
    name: notify-refused
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: events
spec:
  type: generic
  secretRef:
    name: alert-provider
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: everything
spec:
  providerRef:
    name: events
  eventSeverity: info
  eventSources:
  - kind: ResourceSet
    name: '*'
  - kind: ResourceSetInputProvider
    name: '*'
  - kind: ManifestGeneration
    name: '*'
  - kind: GitRepository
    name: '*'
`

// secretPathsEndpoint is the HTTP server of the scenario: the webhook the notifications and the
// Alert post to, and the ExternalService of the providers. It keeps every request it receives.
type secretPathsEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests []receivedRequest
}

type receivedRequest struct {
	Path          string
	Authorization string
	Body          string
}

func newSecretPathsEndpoint(t testing.TB) *secretPathsEndpoint {
	e := &secretPathsEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.requests = append(e.requests, receivedRequest{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: string(body)})
		e.mu.Unlock()
		switch {
		case r.URL.Path == "/inputs":
			_, _ = io.WriteString(w, `{"inputs": [{"id": "one", "name": "one"}]}`)
		case r.URL.Path == "/echo" || strings.HasPrefix(r.URL.Path, "/refuse/"):
			// A server that echoes what it was sent, credentials included, in its refusal.
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "refused %s %s with %q\n%s", r.Method, r.URL, r.Header.Get("Authorization"), body)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// received returns the requests to paths starting with prefix.
func (e *secretPathsEndpoint) received(prefix string) []receivedRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []receivedRequest
	for _, r := range e.requests {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// bodies are the bodies of the requests to paths starting with prefix.
func (e *secretPathsEndpoint) bodies(prefix string) string {
	// Not the paths: they hold the core by design (an address is a credential).
	var b strings.Builder
	for _, r := range e.received(prefix) {
		fmt.Fprintf(&b, "%s\n", r.Body)
	}
	return b.String()
}

// The secret-paths regression suite: see the comment at the top of the file.
func TestScenarioSecretDataThroughOtherPaths(t *testing.T) {
	t.Parallel()
	s := newScenario(t, "secret-paths")
	g := s.g
	c := newSecretCanary(t)
	endpoint := newSecretPathsEndpoint(t)
	s.gitSecret(s.ns, "git-credentials")
	s.secretPathsSecrets(c, endpoint.URL)

	// kubectl's client-side apply: the last-applied annotation holds the data.
	dir := t.TempDir()
	kubectlFile := filepath.Join(dir, "kubectl-secrets.yaml")
	g.Expect(os.WriteFile(kubectlFile, []byte(strings.NewReplacer("__NS__", s.ns,
		"__B64_KUBECTL__", b64(c.value("kubectl")), "__KUBECTL__", jsonString(c.value("kubectl"), false)).Replace(kubectlSecrets)), 0o600)).To(Succeed())
	kubectl(s, "apply", "-f", kubectlFile)
	lastApplied := mustObject(g, schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, s.ns, "kubectl-rs").GetAnnotations()[corev1.LastAppliedConfigAnnotation]
	// The search itself: it finds the canary where it must be, in each form.
	found, _ := c.leaks(lastApplied)
	g.Expect(found).To(ContainElements("core", HavePrefix("base64+")),
		"the canary is found in kubectl's annotation, as it is (stringData) and in base64 (data)")

	repo, commit := s.newRepo("secret-paths", secretPathsRepo(c, s.ns))
	s.create(secretPathsNotifications)
	g.Eventually(readyOf(gateGVK, s.ns, "notified"), timeout).Should(HavePrefix("True|"))
	s.create(secretPathsSources, "__GIT__", repo.HTTPURL(), "__ENDPOINT__", endpoint.URL)

	sets := secretPathsResourceSets(c, s.ns, "applied")
	for _, name := range sortedKeys(sets) {
		s.create(sets[name])
	}
	s.create(manifestGenerationOf("mg-valid", "valid", "  gates:\n    refs: [notified]\n"))
	s.create(manifestGenerationOf("mg-update", "update", ""))
	for kind := range invalidSecrets {
		s.create(manifestGenerationOf("mg-"+kind, "invalid-"+kind, ""))
	}

	// Everything settles, the failures included.
	revision := "master@sha1:" + commit
	settled(g, gitRepositoryGVK, s.ns, "secret-paths", HavePrefix("True|"), artifactRevision(revision))
	// A GitRepository or a provider that fails keeps observedGeneration 0: their Ready condition
	// only.
	g.Eventually(conditionOf(gitRepositoryGVK, s.ns, "refused", "Ready"), timeout).Should(HavePrefix("False|"))
	settled(g, resourceSetGVK, s.ns, "rs-valid", HavePrefix("True|"), nil)
	settled(g, resourceSetGVK, s.ns, "rs-kubeconfig", HavePrefix("True|"), nil)
	settled(g, manifestGenerationGVK, s.ns, "mg-valid", HavePrefix("True|"), nil)
	settled(g, manifestGenerationGVK, s.ns, "mg-update", HavePrefix("True|"), nil)
	settled(g, resourceSetInputProviderGVK, s.ns, "service", HavePrefix("True|"), nil)
	g.Eventually(conditionOf(resourceSetInputProviderGVK, s.ns, "service-refuses", "Ready"), timeout).Should(HavePrefix("False|"))
	g.Eventually(conditionOf(resourceSetInputProviderGVK, s.ns, "git-refused", "Ready"), timeout).Should(HavePrefix("False|"))
	g.Expect(endpoint.received("/inputs")).To(ContainElement(HaveField("Authorization", "Bearer "+c.value("applied"))),
		"the ExternalService got the Secret's token")
	// The failures, as the API server (or the controller) words them. A failed reconciliation
	// that is retried leaves status.observedGeneration as it was: their Ready condition only (the
	// objects are never changed, so it is this generation's).
	failures := map[string]string{
		"rs-input-secret":      "False|ReconciliationFailed|Secret/" + s.ns + "/rs-input-secret dry-run failed: failed to convert new object",
		"rs-copy-tls":          "False|ReconciliationFailed|Secret/" + s.ns + "/rs-copy-tls dry-run failed (Invalid): Secret \"rs-copy-tls\" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]",
		"rs-broken-kubeconfig": "False|BuildFailed|build failed: invalid data reference: the kubeconfig in Secret '" + s.ns + "/broken-kubeconfig' does not parse: json: cannot unmarshal string into Go struct field Config.clusters",
		"rs-depends":           "False|DependencyNotReady|dependency 'v1/Secret " + s.ns + "/source-token' readyExpr failed: no such key: ",
	}
	for _, who := range []string{"rs", "mg"} {
		for kind, message := range map[string]string{
			"bad-base64":       "Secret/" + s.ns + "/" + who + "-bad-base64 dry-run failed: failed to convert new object",
			"bad-key":          `Secret "` + who + `-bad-key" is invalid: data[bad key!]: Invalid value: "bad key!": a valid config key must consist`,
			"tls-missing-key":  `Secret "` + who + `-tls-missing-key" is invalid: data[tls.key]: Required value`,
			"bad-dockerconfig": `Secret "` + who + `-bad-dockerconfig" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>"`,
			"data-not-a-map":   "Secret/" + s.ns + "/" + who + "-data-not-a-map dry-run failed: failed to create typed patch object",
			"stringdata-list":  "Secret/" + s.ns + "/" + who + "-stringdata-list dry-run failed: failed to create typed patch object",
			"immutable":        `Secret "kubectl-immutable-` + who + `" is invalid: data: Forbidden: field is immutable when ` + "`immutable`" + ` is set`,
			"type-change":      `Secret "kubectl-type-` + who + `" is invalid: type: Invalid value: "kubernetes.io/basic-auth": field is immutable`,
			"too-large":        `Secret "` + who + `-too-large" is invalid: data: Too long: may not be more than 1048576 bytes`,
		} {
			failures[who+"-"+kind] = "False|ReconciliationFailed|" + message
		}
	}
	for _, name := range sortedKeys(failures) {
		gvk := resourceSetGVK
		if strings.HasPrefix(name, "mg-") {
			gvk = manifestGenerationGVK
		}
		prefix, message, _ := strings.Cut(failures[name], "|")
		reason, message, _ := strings.Cut(message, "|")
		g.Eventually(conditionOf(gvk, s.ns, name, "Ready"), timeout).Should(And(HavePrefix(prefix+"|"+reason+"|"), ContainSubstring(message)), name)
	}

	// A ManifestUpdate whose updater changes a Secret too: the verification fails and names the
	// field, not its values.
	s.create(`apiVersion: generator.toolkit.fluxcd.io/v1alpha1
kind: ManifestUpdate
metadata:
  name: app-1.1.0
spec:
  generationRef:
    name: mg-update
  workload: __NS__:deployment/app
  containerImage:
    container: app
    image: ghcr.io/example/app:1.1.0
`)
	settled(g, manifestUpdateGVK, s.ns, "app-1.1.0", HavePrefix("False|VerificationFailed|verification of the change failed, nothing was pushed: "), nil)

	// The gate checks a Secret with a readyExpr that fails on its value: it closes, and its
	// notifications post the Closed event; without the check it opens again.
	setGateChecks(g, s.ns, "notified", []any{map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "source-token",
		"readyExpr": "metadata.labels[data.token] == 'ready'"}})
	g.Eventually(conditionOf(gateGVK, s.ns, "notified", "Opened"), timeout).Should(HavePrefix("False|"))
	g.Eventually(func() string { return endpoint.bodies("/hook/") }, timeout).Should(ContainSubstring(`"event":"Closed"`))
	g.Eventually(func() string { return endpoint.bodies("/slack/") }, timeout).ShouldNot(BeEmpty())
	setGateChecks(g, s.ns, "notified", nil)
	g.Eventually(func() string { return endpoint.bodies("/hook/") }, timeout).Should(ContainSubstring(`"event":"Opened"`))
	g.Eventually(conditionOf(gateNotificationGVK, s.ns, "refused", "Ready"), timeout).Should(HavePrefix("False|"))
	g.Eventually(func() []receivedRequest { return endpoint.received("/alert/") }, timeout).ShouldNot(BeEmpty())

	// The kubeconfig's cluster reached the ConfigMap (its token must not: the search below).
	g.Expect(mustObject(g, configMapGVK, s.ns, "rs-kubeconfig").Object["data"]).To(HaveKeyWithValue("address", "https://remote.example:6443"))

	// Collect every surface. Each was checked against a bug of its kind, put back in the code on
	// purpose (make build, this test, then the code restored); the test failed, naming the
	// surfaces listed with each bug:
	//
	//   (a) manifest-generator/internal/update/verify.go: diffPaths printing the values it compares
	//       ("data.token is <new>, expected <old>"): the status of ManifestUpdate app-1.1.0 (and
	//       the events, the manifest-generator's log);
	//   (b) kubectl-resourceset's forDisplay no longer masking kubectl's last-applied annotation:
	//       kubectl resourceset build --diff;
	//   (c) resourceset-controller/internal/inputs/externalservice.go quoting the answer of a
	//       service that refuses (it echoes the bearer token): the status of the provider
	//       service-refuses (and the events, the resourceset-controller's log, the Alert payloads);
	//   (d) kubectl-gate's waitingOf putting the waiting object's spec in its entry: the
	//       dashboard's /api/state;
	//   (e) the gating-controller's notify.Sender adding the endpoint's address (the Secret's) to
	//       the body: the three GateNotification payloads;
	//   (f) the resourceset-controller logging the objects it built: its log, and nothing else;
	//   (g) the manifest-generator recording an event with the data of the Secrets it generated:
	//       the events and the Alert payloads;
	//   (h) the fixes of this suite taken out (no secrets.MaskingClient in shared/apply and in
	//       kubectl-resourceset, no secrets.MaskValues in shared/dependency), as the code was
	//       when this test was written: the statuses of rs- and mg-data-not-a-map, rs- and
	//       mg-stringdata-list, rs-depends and Gate notified, the events, the logs of the
	//       resourceset-controller, the manifest-generator and the gating-controller, the diff
	//       (its stderr), the dashboard, the three GateNotification payloads and the Alert
	//       payloads.
	surfaces := map[string]string{}
	// Every event of the namespace, whole: (a), (c), (g), (h).
	surfaces["events"] = namespaceEvents(g, s.ns)
	// Every object of the namespace, every kind (statuses, providers' exportedInputs, the
	// GateNotifications' and the Alert's): (a), (c), (h).
	for name, text := range namespaceObjects(g, s.ns) {
		surfaces["object "+name] = text
	}
	// The four controllers' logs, whole (the canary is this run's: no other scenario writes
	// it): (a), (c), (f), (h).
	for _, ctl := range sys.Controllers {
		data, err := os.ReadFile(ctl.LogPath)
		g.Expect(err).NotTo(HaveOccurred())
		surfaces["log of "+ctl.Name] = string(data)
	}
	// `kubectl resourceset build --diff`, stdout and stderr: (b), (h).
	diff, plain := resourceSetDiff(s, c, dir)
	surfaces["kubectl resourceset build --diff"] = diff
	// The dashboard's JSON: (d), (h).
	surfaces["kubectl gate ui /api/state"] = dashboardState(s)
	// What the GateNotifications and the Flux Alert posted: (c), (e), (g), (h).
	surfaces["GateNotification payloads (generic-hmac)"] = endpoint.bodies("/hook/")
	surfaces["GateNotification payloads (slack)"] = endpoint.bodies("/slack/")
	surfaces["GateNotification payloads (refused)"] = endpoint.bodies("/refuse/")
	surfaces["Alert payloads"] = endpoint.bodies("/alert/")

	// The search finds the canary in what holds it by design: `build` prints a Secret's values.
	found, _ = c.leaks(plain)
	g.Expect(found).To(ContainElements("core", HavePrefix("base64+")), "kubectl resourceset build (without --diff) prints the values")

	leaked := map[string][]string{}
	var where strings.Builder
	for _, name := range sortedKeys(surfaces) {
		g.Expect(surfaces[name]).NotTo(BeEmpty(), name)
		if found, context := c.leaks(surfaces[name]); len(found) > 0 {
			leaked[name] = found
			fmt.Fprintf(&where, "\n%s: %s\n", name, context)
		}
	}
	g.Expect(leaked).To(BeEmpty(), "Secret bytes, by surface and form of the canary; where:\n%s", where.String())

	// What the diff and the messages say instead: the mask, or the field. (An earlier version of
	// the test checked these first: the diff's failed on (b), the ManifestUpdate's on (a).)
	g.Expect(diff).To(And(ContainSubstring("kubectl.kubernetes.io/last-applied-configuration: '***'"),
		ContainSubstring("token: '*** (after)'"), ContainSubstring(".data: expected map, got &{***}")))
	for gvk, names := range map[schema.GroupVersionKind]map[string]string{
		manifestUpdateGVK: {"app-1.1.0": "verification of the change failed, nothing was pushed: Secret " + s.ns + "/update-secret changed (data.token)"},
		resourceSetGVK: {
			"rs-data-not-a-map":  ".data: expected map, got &{***}",
			"rs-stringdata-list": `.stringData.token: expected string, got &value.valueUnstructured{Value:[]interface {}{"***"}}`,
			"rs-depends":         "readyExpr failed: no such key: ***",
		},
		manifestGenerationGVK: {
			"mg-data-not-a-map":  ".data: expected map, got &{***}",
			"mg-stringdata-list": `.stringData.token: expected string, got &value.valueUnstructured{Value:[]interface {}{"***"}}`,
		},
	} {
		for name, want := range names {
			g.Expect(conditionOf(gvk, s.ns, name, "Ready")(g)).To(ContainSubstring(want), name)
		}
	}
	history, _, _ := unstructured.NestedSlice(mustObject(g, gateGVK, s.ns, "notified").Object, "status", "history")
	g.Expect(history).To(ContainElement(And(HaveKeyWithValue("cause", "checks"),
		HaveKeyWithValue("reason", "check 'v1/Secret "+s.ns+"/source-token' readyExpr failed: no such key: ***"))))
}

var (
	resourceSetInputProviderGVK = schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "ResourceSetInputProvider"}
	gateNotificationGVK         = schema.GroupVersionKind{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "GateNotification"}
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setGateChecks replaces spec.checks of a gate.
func setGateChecks(g Gomega, ns, name string, checks []any) {
	g.Eventually(func(g Gomega) {
		gate := mustObject(g, gateGVK, ns, name)
		if checks == nil {
			unstructured.RemoveNestedField(gate.Object, "spec", "checks")
		} else {
			g.Expect(unstructured.SetNestedSlice(gate.Object, checks, "spec", "checks")).To(Succeed())
		}
		g.Expect(k8s().Update(context.Background(), gate)).To(Succeed())
	}, timeout).Should(Succeed())
}

// namespaceEvents is every event of the namespace, whole (message, note, annotations...), as
// JSON.
func namespaceEvents(g Gomega, ns string) string {
	list := &corev1.EventList{}
	g.Expect(k8s().List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).NotTo(BeEmpty())
	data, err := json.Marshal(list.Items)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// namespaceObjects is every object of the namespace, of every kind the API server serves, as
// JSON, by "Kind/name": whole, but for the Secrets (skipped: they hold the canary by design),
// the events (namespaceEvents) and the ResourceSets, whose spec holds the canary: their status.
func namespaceObjects(g Gomega, ns string) map[string]string {
	cfg := rest.CopyConfig(sys.Env.Config)
	cfg.WarningHandler = rest.NoWarnings{} // v1 Endpoints are deprecated: listed all the same
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	lists, err := disc.ServerPreferredNamespacedResources()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !containsVerb(r.Verbs, "list") ||
				r.Kind == "Secret" || r.Kind == "Event" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred(), "listing %s", r.Name)
			for _, item := range items.Items {
				content := item.Object
				if r.Kind == "ResourceSet" {
					content = map[string]any{"status": item.Object["status"]}
				}
				data, err := json.Marshal(content)
				g.Expect(err).NotTo(HaveOccurred())
				out[r.Kind+"/"+item.GetName()] = string(data)
			}
		}
	}
	return out
}

func containsVerb(verbs metav1.Verbs, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// resourceSetDiff runs `kubectl resourceset build --diff` over the scenario's ResourceSets with
// other values (each valid Secret is configured, its data changed), plus one that renders
// kubectl-diff, which kubectl created and nothing manages: its live object holds the
// last-applied annotation. It returns what --diff printed (stdout and stderr), and what `build`
// alone printed.
func resourceSetDiff(s *scenario, c secretCanary, dir string) (diff, plain string) {
	s.t.Helper()
	g := s.g
	sets := secretPathsResourceSets(c, s.ns, "diff")
	// build reads no Secret of the cluster: it refuses a ResourceSet whose inputs come from one.
	delete(sets, "rs-input-secret")
	sets["rs-diff-only"] = strings.ReplaceAll(resourceSetOf("rs-diff-only", "", `apiVersion: v1
kind: Secret
metadata:
  name: kubectl-diff
  namespace: __NS__
data:
  token: `+b64(c.value("diff"))+`
`), "__NS__", s.ns)
	var docs []string
	for _, name := range sortedKeys(sets) {
		docs = append(docs, sets[name])
	}
	file := filepath.Join(dir, "resourcesets.yaml")
	g.Expect(os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600)).To(Succeed())

	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl-resourceset"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+sys.Kubeconfig)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		return stdout.String(), stderr.String(), code
	}
	stdout, stderr, code := run("build", "-f", file, "--diff", "-n", s.ns)
	s.t.Logf("kubectl resourceset build --diff (exit %d):\n%s\nstderr:\n%s", code, stdout, stderr)
	g.Expect(code).To(Equal(2), "some objects cannot be compared: the invalid Secrets")
	// The valid Secrets are compared, with their changed data, and kubectl's annotation.
	g.Expect(stdout).To(ContainSubstring("► Secret/" + s.ns + "/kubectl-diff configured"))
	g.Expect(stdout).To(ContainSubstring("► Secret/" + s.ns + "/rs-valid configured"))
	plain, _, code = run("build", "-f", file, "-n", s.ns)
	g.Expect(code).To(Equal(0))
	return stdout + "\nstderr:\n" + stderr, plain
}

// dashboardState runs `kubectl gate ui` on the scenario's namespace, as a user does, and returns
// the JSON the page polls (/api/state).
func dashboardState(s *scenario) string {
	s.t.Helper()
	g := s.g
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl-gate"), "ui", "-n", s.ns, "--address", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sys.Kubeconfig)
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	g.Expect(cmd.Start()).To(Succeed())
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred(), "kubectl gate ui printed no URL: %s", stderr.String())
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	g.Expect(url).NotTo(BeEmpty(), line)
	state := httpGet(g, url+"api/state")
	g.Expect(state.Status).To(Equal(http.StatusOK), string(state.Body))
	g.Expect(string(state.Body)).To(ContainSubstring(`"name":"notified"`))
	return string(state.Body)
}
