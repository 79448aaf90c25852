package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// records parses the JSON log lines written so far.
func (s *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestRequestIDInHeaderAndLogs(t *testing.T) {
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, func(c *Config) { c.Logger = logger })
	e.svc.CreateFunc = func(context.Context, group.Request, tracker.CreateOptions) (string, bool, error) {
		return "", false, errors.New("store on fire")
	}

	srv := httptest.NewServer(WithRequestID(e.handler, logger))
	defer srv.Close()
	do := func(method, path, body, key string, h map[string]string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		validateResponse(t, e.handler, req, resp, b)
		return resp
	}

	// A well-formed incoming id is kept, answered, and logged with the
	// failure it led to and with the request line.
	resp := do(http.MethodPost, "/v1/groups", `{"from":"+15550100000","to":["+15550100001"],"text":"hi"}`, e.keys["admin"],
		map[string]string{RequestIDHeader: "proxy-req.42:a"})
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get(RequestIDHeader); got != "proxy-req.42:a" {
		t.Fatalf("X-Request-Id = %q", got)
	}
	var failed, access bool
	for _, r := range logs.records(t) {
		if r["request_id"] != "proxy-req.42:a" {
			continue
		}
		switch r["msg"] {
		case "request failed":
			failed = true
		case "http request":
			access = r["route"] == "POST /v1/groups" && r["status"] == float64(503)
		}
	}
	if !failed || !access {
		t.Fatalf("request id missing from logs (failure %v, request line %v):\n%v", failed, access, logs.records(t))
	}

	// No id, or one that is not plain or too long: a fresh random id.
	hexID := regexp.MustCompile(`^[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for _, in := range []string{"", "has space", "semi;colon=1", strings.Repeat("a", 65), "<script>"} {
		h := map[string]string{}
		if in != "" {
			h[RequestIDHeader] = in
		}
		resp := do(http.MethodGet, "/healthz", "", "", h)
		got := resp.Header.Get(RequestIDHeader)
		if !hexID.MatchString(got) || seen[got] {
			t.Errorf("incoming %q: X-Request-Id %q, want a new random id", in, got)
		}
		seen[got] = true
	}
}

func TestLogHandlerWrapsOnce(t *testing.T) {
	var buf bytes.Buffer
	h := LogHandler(LogHandler(slog.NewJSONHandler(&buf, nil)))
	ctx := context.WithValue(context.Background(), requestIDKey{}, "r1")
	slog.New(h).With("a", 1).InfoContext(ctx, "x")
	if n := strings.Count(buf.String(), `"request_id":"r1"`); n != 1 {
		t.Fatalf("request_id %d times: %s", n, buf.String())
	}
}
