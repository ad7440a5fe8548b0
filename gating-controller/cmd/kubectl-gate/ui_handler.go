package main

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
)

// The page is plain HTML, CSS and JavaScript, embedded so the binary serves it offline.
//
//go:embed ui
var uiFiles embed.FS

// newUIHandler serves the page and its API to the user running the plugin, on loopback.
func newUIHandler(d *dashboard) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", staticFiles())
	d.routes(mux)
	return securityHeaders(ipOrLocalhost(mux))
}

// staticFiles are the pages, scripts and styles, the same for everyone.
func staticFiles() http.Handler {
	static, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	return http.FileServerFS(static)
}

// routes adds the API of the pages, read and acted on with the dashboard's credentials.
func (d *dashboard) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/gates/{namespace}/{name}/{decision}", d.handleRespond)
	mux.HandleFunc("POST /api/gates/{namespace}/{name}/open", d.handleGateRequest(openRequest))
	mux.HandleFunc("POST /api/gates/{namespace}/{name}/close", d.handleGateRequest(closeRequest))
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/{action}", d.handleObjectAction)
	mux.HandleFunc("GET /api/flow", d.handleFlow)
	mux.HandleFunc("GET /api/flow/events", d.handleFlowEvents)
	mux.HandleFunc("GET /api/flow/history", d.handleFlowHistory)
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		state, err := d.state(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(state)
	})
}

// ipOrLocalhost refuses requests for a host name other than localhost: a page of another site
// that rebinds its own name to 127.0.0.1 must not read what the user's credentials can read.
func ipOrLocalhost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if host != "localhost" && net.ParseIP(host) == nil {
			http.Error(w, "the gate dashboard answers only to an IP address or localhost", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the page from loading anything but its own files, and from being framed
// by another site: the page shows what the user's credentials can read.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
