// Package web serves crewcast's live delivery board: one HTML page, a
// stylesheet and a few plain ES modules, embedded with go:embed so the
// binary needs no build step, no CDN and no network to show it.
//
// The board is a client of the JSON API under /v1 on the same origin: it
// signs in with an API key (POST /v1/session sets an HttpOnly cookie), lists
// groups, shows one group's roster and journal, and refetches a group when
// its SSE stream reports a change. All domain logic stays on the server.
//
// Handler serves "/" (index.html) and "/static/<file>"; every other path is
// a 404, so the handler can be mounted at "/" beside the API routes. Every
// response, errors included, carries a strict Content-Security-Policy (no
// inline script or style), X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer. The handler is safe for concurrent use.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// ContentSecurityPolicy is the policy sent with every response of Handler.
// It allows only same-origin scripts, styles and connections, so a reply
// text that slipped into the DOM as HTML still could not run script.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed static
var static embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	name        string
	body        []byte
	contentType string
	etag        string
}

// contentTypes maps the extensions the board uses to their media types.
// A fixed table, not mime.TypeByExtension, so the answer does not depend on
// the host's /etc/mime.types.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

type handler struct {
	assets map[string]*asset // by URL path
}

// Handler returns the board's HTTP handler. Mount it at "/": it answers
// "/" and "/static/…" and 404s everything else.
func Handler() http.Handler {
	assets, err := loadAssets(static)
	if err != nil {
		// The files are compiled in; failing here means the binary itself
		// is broken, which the package tests catch.
		panic(err)
	}
	return &handler{assets: assets}
}

// loadAssets indexes the embedded files by the URL path they are served at.
func loadAssets(fsys fs.FS) (map[string]*asset, error) {
	assets := map[string]*asset{}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("asset %s: no content type for %q", p, path.Ext(p))
		}
		sum := sha256.Sum256(body)
		a := &asset{name: p, body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		urlPath := "/" + p // "/static/app.js"
		if p == "static/index.html" {
			urlPath = "/"
		}
		assets[urlPath] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load web assets: %w", err)
	}
	if assets["/"] == nil {
		return nil, fmt.Errorf("load web assets: static/index.html missing")
	}
	return assets, nil
}

// setSecurityHeaders sets the headers every response carries, errors too:
// a 404 page is still a document a browser might render.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a := h.assets[r.URL.Path]
	if a == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("ETag", a.etag)
	// File names carry no content hash, so browsers must revalidate on
	// every load (a cheap 304 thanks to the ETag) or they could run an old
	// app.js against a newer API after an upgrade.
	hdr.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
