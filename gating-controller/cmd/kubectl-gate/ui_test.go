package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func get(t testing.TB, url, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

func TestUIServesThePageAndTheStateOfTheNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	demoGates(t, ns)
	url := startUI(t, "-n", ns, "--now", "2026-12-20T00:30:00Z")

	res, page := get(t, url, "")
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Expect(page).To(ContainSubstring(`<script src="app.js" defer></script>`))
	// The page loads nothing from elsewhere, and no other site may frame it.
	g.Expect(res.Header.Get("Content-Security-Policy")).To(Equal("default-src 'self'; frame-ancestors 'none'"))
	for _, asset := range []string{"app.js", "style.css"} {
		res, _ := get(t, url+asset, "")
		g.Expect(res.StatusCode).To(Equal(http.StatusOK), asset)
	}

	res, body := get(t, url+"api/state", "")
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Expect(res.Header.Get("Content-Type")).To(Equal("application/json"))
	var st uiState
	g.Expect(json.Unmarshal([]byte(body), &st)).To(Succeed())
	g.Expect(st.Namespace).To(Equal(ns))
	g.Expect(st.Now).To(Equal("2026-12-20T00:30:00Z"))
	var names []string
	for _, gate := range st.Gates {
		names = append(names, gate.Name)
	}
	g.Expect(names).To(Equal([]string{"bypass-signoff", "change-freeze"}))

	// A site that points its own name at 127.0.0.1 does not get the state.
	res, body = get(t, url+"api/state", "attacker.example:80")
	g.Expect(res.StatusCode).To(Equal(http.StatusMisdirectedRequest))
	g.Expect(body).NotTo(ContainSubstring("change-freeze"))
	res, _ = get(t, url+"api/state", "localhost")
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
}

func TestUIRefusesABadNow(t *testing.T) {
	g := NewWithT(t)
	res := kubectlGate(t, "ui", "--now", "tomorrow")
	g.Expect(res.exitCode).To(Equal(1))
	g.Expect(res.stderr).To(HavePrefix(`error: invalid --now "tomorrow"`))
}

func TestUIHelpHidesNow(t *testing.T) {
	g := NewWithT(t)
	res := kubectlGate(t, "ui", "--help")
	g.Expect(res.exitCode).To(Equal(0))
	g.Expect(res.stdout).To(ContainSubstring(`--address string`))
	g.Expect(res.stdout).To(ContainSubstring(`-A, --all-namespaces`))
	g.Expect(strings.Contains(res.stdout, "--now")).To(BeFalse())
}
