package fluxalerts

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"
)

const validEvent = `{"involvedObject":{"kind":"GitRepository","namespace":"apps","name":"app","apiVersion":"source.toolkit.fluxcd.io/v1"},` +
	`"severity":"error","timestamp":"2026-12-03T00:00:00Z","message":"failed","reason":"GitOperationFailed","reportingController":"source-controller"}`

// The receiver takes events of Flux's format and refuses the rest without queueing them: a body
// past the bound from its Content-Length, before it is read.
func TestServerTakesFluxEvents(t *testing.T) {
	var queued []eventv1.Event
	full := false
	s := &Server{MaxBody: 1024, Enqueue: func(ev eventv1.Event) bool {
		if full {
			return false
		}
		queued = append(queued, ev)
		return true
	}}
	post := func(method, body string) int {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(method, "/", strings.NewReader(body)))
		return w.Code
	}
	g := NewWithT(t)
	g.Expect(post(http.MethodPost, validEvent)).To(Equal(http.StatusAccepted))
	g.Expect(queued).To(HaveLen(1))
	g.Expect(queued[0].InvolvedObject.Name).To(Equal("app"))

	g.Expect(post(http.MethodGet, "")).To(Equal(http.StatusMethodNotAllowed))
	g.Expect(post(http.MethodPost, "{")).To(Equal(http.StatusBadRequest))
	g.Expect(post(http.MethodPost, "null")).To(Equal(http.StatusBadRequest))
	g.Expect(post(http.MethodPost, `{"involvedObject":{"kind":"GitRepository"},"severity":"info","message":"m","reason":"r"}`)).To(Equal(http.StatusBadRequest))
	g.Expect(post(http.MethodPost, strings.Replace(validEvent, `"error"`, `"panic"`, 1))).To(Equal(http.StatusBadRequest))
	g.Expect(post(http.MethodPost, `{"involvedObject":[]}`)).To(Equal(http.StatusBadRequest))
	g.Expect(post(http.MethodPost, strings.Replace(validEvent, `"error"`, `"trace"`, 1))).To(Equal(http.StatusAccepted))
	g.Expect(post(http.MethodPost, validEvent+strings.Repeat(" ", 2048))).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(queued).To(HaveLen(1), "nothing else was queued")

	full = true
	g.Expect(post(http.MethodPost, validEvent)).To(Equal(http.StatusServiceUnavailable))
}
