package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluice-gitops/sluice/shared/testserver"
)

// fluxEvent is the part of Flux's event format (fluxcd/pkg/apis/event's Event) that Flux's
// notification-controller reads.
type fluxEvent struct {
	InvolvedObject struct {
		Kind, Namespace, Name, APIVersion string
	} `json:"involvedObject"`
	Severity            string            `json:"severity"`
	Reason              string            `json:"reason"`
	Message             string            `json:"message"`
	Metadata            map[string]string `json:"metadata"`
	ReportingController string            `json:"reportingController"`
}

// With --events-addr a controller posts its events in Flux's event format, as Flux's controllers
// post them to the notification-controller: the object, the severity, the reason, the message,
// the revision under "<group>/revision" and the object's event.toolkit.fluxcd.io/ annotations.
func TestControllerPostsEventsToEventsAddr(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []fluxEvent
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev fluxEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	}))
	t.Cleanup(sink.Close)
	dir := t.TempDir()
	startController(t, "source-controller", kubeconfigIn(t, dir), dir, "--events-addr="+sink.URL)

	repo := testserver.NewGitServer(t, testserver.Options{}).NewRepo(t, "app")
	sha := repo.Commit(t, "Initial commit", map[string]string{"app.yaml": "kind: ConfigMap\n"})
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "events-e2e"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "events-e2e", "name": "app",
			"annotations": map[string]any{"event.toolkit.fluxcd.io/token": "deploy-42"}},
		"spec": map[string]any{"url": repo.HTTPURL(), "interval": "1h"},
	}})).To(Succeed())

	g.Eventually(func() []fluxEvent { mu.Lock(); defer mu.Unlock(); return append([]fluxEvent(nil), got...) }, time.Minute).Should(
		ContainElement(And(
			HaveField("InvolvedObject.Kind", "GitRepository"), HaveField("InvolvedObject.Namespace", "events-e2e"),
			HaveField("InvolvedObject.Name", "app"), HaveField("Severity", "info"), HaveField("Reason", "NewArtifact"),
			HaveField("Message", "stored artifact for commit 'Initial commit'"),
			HaveField("Metadata", And(
				HaveKeyWithValue("source.toolkit.fluxcd.io/revision", "master@sha1:"+sha),
				HaveKeyWithValue("event.toolkit.fluxcd.io/token", "deploy-42"))),
			HaveField("ReportingController", "source-controller"),
		)))
}
