package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/sluice-gitops/sluice/e2e/harness"
)

var gateGVK = schema.GroupVersionKind{Group: "gating.toolkit.fluxcd.io", Version: "v1alpha1", Kind: "Gate"}

// gateUser is a real user of the control plane: a client certificate signed by the CA the API
// server trusts, so request.userInfo.username is the certificate's name.
type gateUser struct {
	name       string
	kubeconfig string
	client     client.Client
}

// newGateUser provisions the user and writes a kubeconfig for it into dir.
func newGateUser(t *testing.T, dir, name string) gateUser {
	t.Helper()
	g := NewWithT(t)
	user, err := env.Environment.AddUser(envtest.User{Name: name}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := user.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, name+".kubeconfig")
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	c, err := client.New(user.Config(), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	return gateUser{name: name, kubeconfig: path, client: c}
}

// plugin runs `kubectl gate` as the user.
func (u gateUser) plugin(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "kubectl-gate"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// annotate merge-patches the gate's annotations as the user, as `kubectl annotate --overwrite`
// does; a nil value removes the annotation.
func (u gateUser) annotate(ns, name string, dryRun bool, annotations map[string]*string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	gate := &unstructured.Unstructured{}
	gate.SetGroupVersionKind(gateGVK)
	gate.SetNamespace(ns)
	gate.SetName(name)
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return u.client.Patch(context.Background(), gate, client.RawPatch(types.MergePatchType, patch), opts...)
}

// Who opened a gate is who did it: with the ValidatingAdmissionPolicy of deploy/default
// installed, the API server accepts an open or close request only in the name of the user it
// authenticated. alice and bob are two real users with the same rights on the gates of a
// namespace; each makes requests with `kubectl gate` and tries to make one in the other's name.
// The gating-controller, run as its own ServiceAccount, keeps updating the gates.
func TestGateRequestIsMadeInTheNameOfTheAuthenticatedUser(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildObjects(t, filepath.Join(env.Root, "deploy", "default"))
	var policy []*unstructured.Unstructured
	for _, o := range objects {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && o.GetName() == "gate-requested-by" {
			policy = append(policy, o)
		}
	}
	g.Expect(policy).To(HaveLen(2), "deploy/default ships the policy and its binding")
	applyObjects(t, policy)

	const ns = "requested-by-e2e"
	for _, name := range []string{deployNamespace, ns} {
		g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	}
	// alice and bob may do anything to the gates of ns, and nothing else.
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-operator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{gateGVK.Group}, Resources: []string{"gates"}, Verbs: []string{"*"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-operators"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"},
		},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gate-operator"},
	})).To(Succeed())
	dir := t.TempDir()
	alice, bob := newGateUser(t, dir, "alice"), newGateUser(t, dir, "bob")
	// The controller runs as its ServiceAccount with its Deployment's flags and its webhook
	// receiver on a free loopback port.
	ports, err := harness.FreePorts(1)
	g.Expect(err).NotTo(HaveOccurred())
	receiverURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	controller := startAs(t, objects, "gating-controller", "--receiver-addr="+strings.TrimPrefix(receiverURL, "http://"))

	gate := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gateGVK.GroupVersion().String(), "kind": gateGVK.Kind,
		"metadata": map[string]any{"namespace": ns, "name": "release"},
		"spec":     map[string]any{"default": "closed"},
	}}
	g.Expect(alice.client.Create(ctx, gate)).To(Succeed(), "a gate without requests is created by anyone allowed to")

	now := func() *string { s := time.Now().UTC().Format(time.RFC3339); return &s }
	by := func(name string) *string { return &name }
	// The API server loads a new policy within a second or so: wait until it refuses a forged
	// request, in a dry run that changes nothing.
	g.Eventually(func() error {
		return alice.annotate(ns, "release", true, map[string]*string{
			"open.gate.fluxcd.io/requestedAt": now(), "open.gate.fluxcd.io/requestedBy": by("bob")})
	}, 30*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy 'gate-requested-by'")))

	// alice opens the gate with the plugin, with a reason and a duration: in her own name, which
	// the controller records.
	out, err := alice.plugin("open", "release", "ship the fix", "--for", "30m", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("open requested by alice for 30m"))
	lastRequestBy := func(g Gomega) string {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		by, _, _ := unstructured.NestedString(gate.Object, "status", "request", "requestedBy")
		return by
	}
	g.Eventually(lastRequestBy, time.Minute).Should(Equal("alice"))
	g.Expect(requestWindow(gate)).To(Equal(30 * time.Minute))

	// Every annotation of a request is part of it: bob can neither plant a duration or a reason
	// that alice's next request would inherit, nor change or remove those of her request, nor
	// start a close request with a duration only. The API server says which annotation he
	// changed, and alice's request stays as she wrote it.
	for _, plant := range []struct {
		key   string
		value *string
		by    string
	}{
		{"open.gate.fluxcd.io/duration", by("8760h"), "'alice'"},
		{"open.gate.fluxcd.io/reason", by("approved by the CAB"), "'alice'"},
		{"open.gate.fluxcd.io/reason", nil, "'alice'"},
		{"open.gate.fluxcd.io/comment", by("anything"), "'alice'"},
		{"close.gate.fluxcd.io/duration", by("8760h"), "missing"},
	} {
		err = bob.annotate(ns, "release", false, map[string]*string{plant.key: plant.value})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", plant.key, err)
		verb := strings.Split(plant.key, ".")[0]
		g.Expect(err.Error()).To(ContainSubstring(
			"%s.gate.fluxcd.io/requestedBy must be 'bob', the user making this request, but it is %s: "+
				"a gate is %s in one's own name, as `kubectl gate %s` does, and every %s.gate.fluxcd.io/ annotation "+
				"is part of the request (this write changes %s); to withdraw a request, remove every %s.gate.fluxcd.io/ annotation",
			verb, plant.by, map[string]string{"open": "opened", "close": "closed"}[verb], verb, verb, plant.key, verb))
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	g.Expect(gate.GetAnnotations()).To(And(
		HaveKeyWithValue("open.gate.fluxcd.io/reason", "ship the fix"),
		HaveKeyWithValue("open.gate.fluxcd.io/duration", "30m"),
		Not(HaveKey("open.gate.fluxcd.io/comment")),
		Not(HaveKey("close.gate.fluxcd.io/duration"))))
	// Withdrawing a request whole is allowed (a dry run: alice's request stays).
	g.Expect(bob.annotate(ns, "release", true, map[string]*string{
		"open.gate.fluxcd.io/requestedAt": nil, "open.gate.fluxcd.io/requestedBy": nil,
		"open.gate.fluxcd.io/reason": nil, "open.gate.fluxcd.io/duration": nil})).To(Succeed())
	// Removing only the user's name is not: the rest would be anyone's.
	err = bob.annotate(ns, "release", false, map[string]*string{
		"open.gate.fluxcd.io/requestedAt": nil, "open.gate.fluxcd.io/requestedBy": nil})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("open.gate.fluxcd.io/requestedBy must be 'bob', the user making this request, but it is missing"))

	// alice cannot open it in bob's name: the API server refuses, says why, and keeps her request.
	err = alice.annotate(ns, "release", false, map[string]*string{
		"open.gate.fluxcd.io/requestedAt": now(), "open.gate.fluxcd.io/requestedBy": by("bob")})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(
		"open.gate.fluxcd.io/requestedBy must be 'alice', the user making this request, but it is 'bob': " +
			"a gate is opened in one's own name, as `kubectl gate open` does"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	g.Expect(gate.GetAnnotations()).To(HaveKeyWithValue("open.gate.fluxcd.io/requestedBy", "alice"))

	// Nor can bob make a new request under the name alice left on the gate (a time other than
	// hers: the same second would be the same request), nor close it in her name.
	anHourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	err = bob.annotate(ns, "release", false, map[string]*string{"open.gate.fluxcd.io/requestedAt": &anHourAgo})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("open.gate.fluxcd.io/requestedBy must be 'bob', the user making this request, but it is 'alice'"))
	err = bob.annotate(ns, "release", false, map[string]*string{
		"close.gate.fluxcd.io/requestedAt": now(), "close.gate.fluxcd.io/requestedBy": by("alice")})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("close.gate.fluxcd.io/requestedBy must be 'bob', the user making this request, but it is 'alice'"))

	// A request must name someone: a gate created with an anonymous request is refused.
	anonymous := gate.DeepCopy()
	anonymous.SetName("anonymous")
	anonymous.SetResourceVersion("")
	anonymous.SetAnnotations(map[string]string{"open.gate.fluxcd.io/requestedAt": *now()})
	err = alice.client.Create(ctx, anonymous)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("open.gate.fluxcd.io/requestedBy must be 'alice', the user making this request, but it is missing"))

	// bob closes the gate with the plugin, in his name, for an hour.
	out, err = bob.plugin("close", "release", "incident", "--for", "1h", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("close requested by bob for 1h"))
	g.Eventually(lastRequestBy, time.Minute).Should(Equal("bob"))
	g.Expect(gate.GetAnnotations()).To(And(
		HaveKeyWithValue("close.gate.fluxcd.io/reason", "incident"), HaveKeyWithValue("close.gate.fluxcd.io/duration", "1h")))

	// Writes that leave the requests as they are pass, whoever makes them: alice changes the
	// spec of the gate that carries bob's request.
	g.Eventually(func(g Gomega) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gateGVK)
		g.Expect(alice.client.Get(ctx, client.ObjectKeyFromObject(gate), obj)).To(Succeed())
		g.Expect(unstructured.SetNestedField(obj.Object, "2h", "spec", "window")).To(Succeed())
		g.Expect(alice.client.Update(ctx, obj)).To(Succeed())
	}, 30*time.Second).Should(Succeed())

	// The history names each user; the controller, updating the gates as its ServiceAccount, was
	// never refused.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	history, _, _ := unstructured.NestedSlice(gate.Object, "status", "history")
	var names []string
	for _, h := range history {
		if m := h.(map[string]any); m["cause"] == "request" {
			names = append(names, fmt.Sprint(m["requestedBy"]))
		}
	}
	g.Expect(names).To(HaveExactElements("bob", "alice"), "history: %v", history)

	// The webhook receiver makes its requests in the controller's own name, which the policy
	// accepts: a CI job holding the gate's token opens it, and the history says so.
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-token"},
		StringData: map[string]string{"token": "e2e-receiver-token"},
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gateGVK)
		g.Expect(alice.client.Get(ctx, client.ObjectKeyFromObject(gate), obj)).To(Succeed())
		g.Expect(unstructured.SetNestedField(obj.Object, "release-token", "spec", "receiver", "secretRef", "name")).To(Succeed())
		g.Expect(alice.client.Update(ctx, obj)).To(Succeed())
	}, 30*time.Second).Should(Succeed())
	g.Eventually(func() (int, error) {
		body := fmt.Sprintf(`{"reason":"pipeline 42","timestamp":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
		req, err := http.NewRequest(http.MethodPost, receiverURL+"/gates/"+ns+"/release/open", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer e2e-receiver-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, time.Second).Should(Equal(http.StatusAccepted), "the receiver sees the gate's spec.receiver from its cache")
	controllerAccount := "system:serviceaccount:" + deployNamespace + ":gating-controller"
	g.Eventually(lastRequestBy, time.Minute).Should(Equal(controllerAccount))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
	reason, _, _ := unstructured.NestedString(gate.Object, "status", "request", "reason")
	g.Expect(reason).To(Equal("receiver/release-token: pipeline 42"))

	g.Expect(forbiddenLines(t, controller)).To(BeEmpty())
}

// requestWindow is how long the gate's request in force lasts: from status.requestedAt to
// status.resetToDefaultAt.
func requestWindow(gate *unstructured.Unstructured) time.Duration {
	at, _, _ := unstructured.NestedString(gate.Object, "status", "requestedAt")
	end, _, _ := unstructured.NestedString(gate.Object, "status", "resetToDefaultAt")
	from, err1 := time.Parse(time.RFC3339, at)
	to, err2 := time.Parse(time.RFC3339, end)
	if err1 != nil || err2 != nil {
		return 0
	}
	return to.Sub(from)
}
