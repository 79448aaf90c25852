package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/crewcast/crewcast/apitype"
)

// The API client behind send, status and report: plain net/http and the
// JSON shapes of the HTTP API (docs/openapi.yaml), nothing shared with the
// server's code so that the CLI tests exercise the wire format.

// clientFlags are the --url and --key flags every client command takes,
// filled from CREWCAST_URL and CREWCAST_KEY when not given (docs/design.md §10).
type clientFlags struct {
	fs       *flag.FlagSet
	url, key string
}

// clientEnv binds the client flags to their environment variables.
var clientEnv = []envBinding{{"url", "CREWCAST_URL"}, {"key", "CREWCAST_KEY"}}

func bindClientFlags(fs *flag.FlagSet) *clientFlags {
	f := &clientFlags{fs: fs}
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "crewcast server URL (env CREWCAST_URL)")
	fs.StringVar(&f.key, "key", "", "API key (env CREWCAST_KEY)")
	return f
}

// client returns an API client for the flags, checking them first.
func (f *clientFlags) client() (*apiClient, error) {
	if err := applyEnv(f.fs, clientEnv); err != nil {
		return nil, err
	}
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--url %q is not an http(s) URL (set --url or CREWCAST_URL)", f.url)
	}
	if f.key == "" {
		return nil, usagef("an API key is required: --key or CREWCAST_KEY ('crewcast demo' prints one; 'crewcast keys create' makes one)")
	}
	// No overall timeout: event streams are long-lived. Requests carry the
	// command's context (Ctrl-C) instead.
	return &apiClient{base: strings.TrimRight(f.url, "/"), key: f.key, http: &http.Client{}}, nil
}

type apiClient struct {
	base, key string
	http      *http.Client
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Code    string
	Message string
	Fields  []struct{ Field, Message string }
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("%s (%s, HTTP %d)", msg, e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.Status)
}

// request sends one API request; a non-2xx answer becomes an *apiError.
func (c *apiClient) request(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
		header = header.Clone()
		if header == nil {
			header = http.Header{}
		}
		header.Set("Content-Type", "application/json")
	}
	return c.send(ctx, method, path, rd, header)
}

// send sends one API request with a body already encoded (its
// Content-Type in header); a non-2xx answer becomes an *apiError.
func (c *apiClient) send(ctx context.Context, method, path string, rd io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unreachable(c.base, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		ae := &apiError{Status: resp.StatusCode}
		var env struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Fields  []struct {
					Field   string `json:"field"`
					Message string `json:"message"`
				} `json:"fields"`
			} `json:"error"`
		}
		if b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err == nil && json.Unmarshal(b, &env) == nil {
			ae.Code, ae.Message = env.Error.Code, env.Error.Message
			for _, f := range env.Error.Fields {
				ae.Fields = append(ae.Fields, struct{ Field, Message string }{f.Field, f.Message})
			}
		}
		return nil, ae
	}
	return resp, nil
}

// unreachableError is a request that found no server to talk to.
type unreachableError struct {
	url string
	err error
}

func (e unreachableError) Error() string {
	return "cannot reach crewcast at " + e.url + " — is it running? (crewcast demo)"
}

func (e unreachableError) Unwrap() error { return e.err }

// unreachable turns a failure to connect (refused, no route, unknown
// host) into words an operator can act on; other errors stay as they are.
func unreachable(base string, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	if (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) {
		return unreachableError{url: base, err: err}
	}
	return err
}

// getJSON decodes a JSON answer into out.
func (c *apiClient) doJSON(ctx context.Context, method, path string, body any, header http.Header, out any) (int, error) {
	resp, err := c.request(ctx, method, path, body, header)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// ---- API shapes (package apitype) ----

// finished reports whether a group will change no more without an
// operator: complete or canceled.
func finished(g apitype.Group) bool { return g.Status == "complete" || g.Status == "canceled" }

// ---- event streams ----

// streamEvent is one server-sent event.
type streamEvent struct {
	ID, Event, Data string
}

// stream reads a server-sent event stream, calling fn for each event (not
// for comments) until the stream ends, ctx is done or fn fails.
func (c *apiClient) stream(ctx context.Context, path, lastID string, fn func(streamEvent) error) error {
	h := http.Header{"Accept": {"text/event-stream"}}
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	resp, err := c.request(ctx, "GET", path, nil, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // an event's data line may be long
	var ev streamEvent
	data := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data {
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = streamEvent{}, false
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			ev.Data, data = value, true
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// isTerminal reports whether w is a terminal, where progress is redrawn
// in place instead of printed line by line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseArgs parses flags that may come before or after positional
// arguments ("status ID --key K" as well as "status --key K ID") and
// returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// wantArgs checks the number of positional arguments, naming the first
// unexpected one or what is missing.
func wantArgs(fs *flag.FlagSet, pos []string, n int, what string) error {
	switch {
	case len(pos) > n:
		return usagef("unexpected argument %q: want %s (see '%s -h')", pos[n], what, fs.Name())
	case len(pos) < n:
		return usagef("missing argument: want %s (see '%s -h')", what, fs.Name())
	}
	return nil
}

// fmtTime shows a timestamp compactly in local time, or "-".
func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
