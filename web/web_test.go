package web

import (
	"encoding/xml"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// assetURLs lists every embedded file with the URL it is served at.
func assetURLs(t *testing.T) map[string]string {
	t.Helper()
	urls := map[string]string{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		u := "/" + p
		if p == "static/index.html" {
			u = "/"
		}
		urls[p] = u
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(urls) < 5 {
		t.Fatalf("only %d embedded files: %v", len(urls), urls)
	}
	return urls
}

// sources returns the text of every embedded file with one of the
// extensions, by file name; finding none fails, so a check over them
// cannot pass on an empty set.
func sources(t *testing.T, exts ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for file := range assetURLs(t) {
		if !slices.Contains(exts, path.Ext(file)) {
			continue
		}
		src, err := fs.ReadFile(static, file)
		if err != nil {
			t.Fatal(err)
		}
		out[file] = string(src)
	}
	if len(out) == 0 {
		t.Fatalf("no embedded %v files", exts)
	}
	return out
}

func get(t *testing.T, h http.Handler, method, url string, hdr http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func checkSecurityHeaders(t *testing.T, url string, res *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
		"X-Content-Type-Options":     "nosniff",
		"Referrer-Policy":            "no-referrer",
		"X-Frame-Options":            "DENY",
		"Cross-Origin-Opener-Policy": "same-origin",
	}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", url, k, got, v)
		}
	}
}

func TestHandlerServesEveryAsset(t *testing.T) {
	t.Parallel()
	h := Handler()
	wantType := map[string]string{
		".html": "text/html; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".svg":  "image/svg+xml",
	}
	for file, url := range assetURLs(t) {
		res := get(t, h, http.MethodGet, url, nil)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d", url, res.StatusCode)
			continue
		}
		want, err := fs.ReadFile(static, file)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != string(want) {
			t.Errorf("GET %s: body differs from %s", url, file)
		}
		if ct, ok := wantType[path.Ext(file)]; !ok {
			t.Errorf("%s: test has no expected content type for this extension", file)
		} else if got := res.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", url, got, ct)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", url, got)
		}
		if res.Header.Get("ETag") == "" {
			t.Errorf("GET %s: no ETag", url)
		}
		checkSecurityHeaders(t, url, res)
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	t.Parallel()
	h := Handler()
	first := get(t, h, http.MethodGet, "/static/app.js", nil)
	etag := first.Header.Get("ETag")
	res := get(t, h, http.MethodGet, "/static/app.js", http.Header{"If-None-Match": {etag}})
	if res.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: status %d, want 304", res.StatusCode)
	}
	checkSecurityHeaders(t, "/static/app.js (304)", res)

	other := get(t, h, http.MethodGet, "/static/style.css", nil).Header.Get("ETag")
	if other == etag {
		t.Errorf("app.js and style.css share ETag %s", etag)
	}
}

func TestHandlerHead(t *testing.T) {
	t.Parallel()
	res := get(t, Handler(), http.MethodHead, "/", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD /: status %d, %d body bytes", res.StatusCode, len(body))
	}
	checkSecurityHeaders(t, "HEAD /", res)
}

func TestHandlerRejectsUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	h := Handler()
	for _, tc := range []struct {
		method, url string
		status      int
	}{
		{http.MethodGet, "/static/nope.js", http.StatusNotFound},
		{http.MethodGet, "/static/", http.StatusNotFound},
		{http.MethodGet, "/index.html", http.StatusNotFound},
		{http.MethodGet, "/static/../web.go", http.StatusNotFound},
		{http.MethodGet, "/app.js", http.StatusNotFound},
		{http.MethodGet, "/favicon.ico", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/static/app.js", http.StatusMethodNotAllowed},
	} {
		res := get(t, h, tc.method, tc.url, nil)
		if res.StatusCode != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.url, res.StatusCode, tc.status)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("%s %s: error Content-Type %q", tc.method, tc.url, ct)
		}
		checkSecurityHeaders(t, tc.method+" "+tc.url, res)
	}
}

// TestIndexHasNoInlineScriptOrStyle parses index.html: the CSP forbids
// inline script and style, so any would be dead code in the browser (and a
// sign that someone is about to loosen the policy). It also checks that
// every referenced local file is embedded.
func TestIndexHasNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	src, err := fs.ReadFile(static, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(src)))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var (
		stack   []string
		scripts int
		refs    []string
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse index.html: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(tok.Name.Local)
			stack = append(stack, name)
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				k := strings.ToLower(a.Name.Local)
				attrs[k] = a.Value
				if k == "style" {
					t.Errorf("<%s> has a style attribute", name)
				}
				if strings.HasPrefix(k, "on") {
					t.Errorf("<%s> has an inline event handler %s", name, k)
				}
				if strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Value)), "javascript:") {
					t.Errorf("<%s %s> uses a javascript: URL", name, k)
				}
			}
			switch name {
			case "style":
				t.Errorf("index.html has a <style> element")
			case "script":
				scripts++
				if attrs["src"] == "" {
					t.Errorf("index.html has an inline <script>")
				}
				refs = append(refs, attrs["src"])
			case "link", "img":
				if v := attrs["href"] + attrs["src"]; v != "" {
					refs = append(refs, v)
				}
			}
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "script" && strings.TrimSpace(string(tok)) != "" {
				t.Errorf("index.html has script text: %q", strings.TrimSpace(string(tok)))
			}
		}
	}
	if scripts == 0 {
		t.Error("index.html loads no script")
	}
	for _, ref := range refs {
		if strings.Contains(ref, "//") {
			t.Errorf("index.html references %q: the board must work offline, no external URLs", ref)
			continue
		}
		if _, err := fs.Stat(static, path.Join("static", strings.TrimPrefix(ref, "static/"))); err != nil {
			t.Errorf("index.html references %q, which is not embedded", ref)
		}
	}
}

// TestScriptsUseNoHTMLSinks keeps reply texts (attacker-controlled SMS)
// from ever being parsed as HTML: the JS may only build DOM nodes and set
// textContent. It also forbids eval-like calls the CSP would block anyway.
func TestScriptsUseNoHTMLSinks(t *testing.T) {
	t.Parallel()
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\s*\(|` +
		`setAttribute\(\s*["']style|createContextualFragment|DOMParser|srcdoc`)
	for file, src := range sources(t, ".js") {
		for i, line := range strings.Split(src, "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s: build nodes with h()/textContent instead", file, i+1, m)
			}
		}
	}
}

// TestNoExternalURLs: the board works offline, so no CDN or remote font.
func TestNoExternalURLs(t *testing.T) {
	t.Parallel()
	remote := regexp.MustCompile(`https?://|@import|url\(\s*["']?//`)
	for file, src := range sources(t, ".js", ".css", ".html") {
		if m := remote.FindString(src); m != "" {
			t.Errorf("%s contains %q: no external resources", file, m)
		}
	}
}

// TestModuleImportsResolve checks that every relative ES module import
// names an embedded file; a typo would blank the board in the browser.
func TestModuleImportsResolve(t *testing.T) {
	t.Parallel()
	imp := regexp.MustCompile(`(?m)^\s*import\s[^"']*["']([^"']+)["']`)
	for file, src := range sources(t, ".js") {
		for _, m := range imp.FindAllStringSubmatch(src, -1) {
			target := path.Join(path.Dir(file), m[1])
			if !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %q: only relative imports of embedded modules", file, m[1])
			} else if _, err := fs.Stat(static, target); err != nil {
				t.Errorf("%s imports %q, which is not embedded", file, m[1])
			}
		}
	}
}

func TestLoadAssetsRejectsUnknownExtension(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"static/index.html": {Data: []byte("<!doctype html>")},
		"static/data.bin":   {Data: []byte("x")},
	}
	if _, err := loadAssets(fsys); err == nil || !strings.Contains(err.Error(), ".bin") {
		t.Fatalf("loadAssets with a .bin file: err = %v, want a content-type error", err)
	}
	if _, err := loadAssets(fstest.MapFS{"static/app.js": {Data: []byte("x")}}); err == nil {
		t.Fatal("loadAssets without index.html: no error")
	}
}

// TestDatesUseOneHelper: every page formats dates through format.js's
// fmtDate family, so the board shows one format (the viewer's locale and
// zone, the zone named) everywhere.
func TestDatesUseOneHelper(t *testing.T) {
	t.Parallel()
	own := regexp.MustCompile(`toLocaleString|toLocaleDateString|toLocaleTimeString|Intl\.DateTimeFormat|toUTCString|toISOString\(\)\.slice`)
	for file, src := range sources(t, ".js") {
		if strings.HasSuffix(file, "format.js") {
			continue
		}
		for i, line := range strings.Split(src, "\n") {
			if m := own.FindString(line); m != "" {
				t.Errorf("%s:%d formats a date itself (%s): use fmtDate from format.js", file, i+1, m)
			}
		}
	}
}
