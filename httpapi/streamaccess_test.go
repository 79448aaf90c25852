package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fastRecheck makes open streams check their access every 50 ms.
func fastRecheck(c *Config) {
	cheapUsers(c)
	c.StreamRecheck = 50 * time.Millisecond
}

// waitEnd reads the stream until the server ends it and returns what it
// sent; it fails the test if the stream is still open after within.
func (c *sseClient) waitEnd(within time.Duration) []sseEvent {
	c.t.Helper()
	type result struct {
		evs []sseEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		var evs []sseEvent
		for {
			ev, err := c.next()
			if err != nil {
				done <- result{evs, err}
				return
			}
			evs = append(evs, ev)
		}
	}()
	select {
	case r := <-done:
		if !errors.Is(r.err, io.EOF) {
			c.t.Fatalf("stream failed instead of ending: %v", r.err)
		}
		return r.evs
	case <-time.After(within):
		c.close()
		<-done
		c.t.Fatalf("the stream was still open %v later", within)
		return nil
	}
}

// endedWith checks that the last event of a stream that lost its access is
// an error event with the given code.
func endedWith(t *testing.T, evs []sseEvent, code string) {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Event != "error" {
		t.Fatalf("stream ended without an error event: %+v", evs)
	}
	var body struct{ Code string }
	if err := json.Unmarshal([]byte(evs[len(evs)-1].Data), &body); err != nil || body.Code != code {
		t.Fatalf("last event %+v, want code %q", evs[len(evs)-1], code)
	}
}

// cookieAuth sets a session cookie on a stream request.
func cookieAuth(c *http.Cookie) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value}) }
}

// A key revoked on another node (the store is shared) ends the streams
// opened with it, all-groups and one-group alike, within a few seconds;
// a stream of another key keeps going.
func TestStreamEndsWhenKeyRevoked(t *testing.T) {
	e := newEnv(t, fastRecheck)
	id := e.createGroup("+15550100001")
	key, kid := e.makeKey(nil, "admin", `{"scopes":["read"],"name":"watcher"}`)
	control := e.openStream("/v1/stream", "", "read")
	all := e.openStream("/v1/stream", "", key)
	one := e.openStream("/v1/groups/"+id+"/stream", "", key)
	c, _, _ := e.login("send", nil)
	board := e.openStreamAs("/v1/stream", "", cookieAuth(c))
	e.nextComment(all, "connected")

	other, err := New(Config{Store: e.st, Service: e.svc, Now: e.clock.Now, Done: e.done})
	if err != nil {
		t.Fatal(err)
	}
	node2 := httptest.NewServer(other)
	defer node2.Close()
	req, _ := http.NewRequest("DELETE", node2.URL+"/v1/keys/"+kid, nil)
	req.Header.Set("Authorization", "Bearer "+e.keys["admin"])
	if r, err := node2.Client().Do(req); err != nil || r.StatusCode != 204 {
		t.Fatalf("revoke on the other node: %v %v", r, err)
	}
	endedWith(t, all.waitEnd(5*time.Second), codeUnauthorized)
	endedWith(t, one.waitEnd(5*time.Second), codeUnauthorized)
	// The send key's board session is untouched; so is the read key.
	gid := e.createGroup("+15550100002")
	for _, s := range []*sseClient{control, board} {
		if _, ch := s.nextChange(); ch.GroupID != gid {
			t.Fatalf("stream of a valid key: change of %s, want %s", ch.GroupID, gid)
		}
	}
	// A board signed in with a key ends with the key.
	if r, b := e.do("DELETE", "/v1/keys/"+e.keyIDs["send"], "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("revoke: %d %s", r.StatusCode, b)
	}
	endedWith(t, board.waitEnd(5*time.Second), codeUnauthorized)
}

// nextComment reads until a comment with text, failing on anything else
// than comments and changes.
func (e *env) nextComment(c *sseClient, text string) {
	e.t.Helper()
	for {
		ev, err := c.next()
		if err != nil {
			e.t.Fatalf("stream: %v", err)
		}
		if ev.Comment == text {
			return
		}
	}
}

// A key's stream ends when the key expires.
func TestStreamEndsWhenKeyExpires(t *testing.T) {
	e := newEnv(t, fastRecheck)
	exp := e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	key, _ := e.makeKey(nil, "admin", `{"scopes":["read"],"expires_at":"`+exp+`"}`)
	s := e.openStream("/v1/stream", "", key)
	e.nextComment(s, "connected")
	e.clock.Advance(time.Hour)
	endedWith(t, s.waitEnd(5*time.Second), codeUnauthorized)
}

// A user's stream ends when the user is disabled or deleted, signs out,
// or has their role lowered (after which the reconnect is checked again
// and allowed, since a viewer may still read).
func TestStreamEndsWithUserAccess(t *testing.T) {
	for _, tc := range []struct {
		name, role string
		act        func(e *env, id string, c *http.Cookie) (*http.Response, []byte)
		reconnect  int // the session's answer afterwards (0: no scope, not checked)
	}{
		{"disabled", "viewer", func(e *env, id string, _ *http.Cookie) (*http.Response, []byte) {
			return e.do("PATCH", "/v1/users/"+id, `{"disabled":true}`, "admin", nil)
		}, 401},
		{"deleted", "viewer", func(e *env, id string, _ *http.Cookie) (*http.Response, []byte) {
			return e.do("DELETE", "/v1/users/"+id, "", "admin", nil)
		}, 401},
		{"signed out", "viewer", func(e *env, _ string, c *http.Cookie) (*http.Response, []byte) {
			return e.withCookie(c, "DELETE", "/v1/session", "", nil)
		}, 401},
		{"role lowered", "dispatcher", func(e *env, id string, _ *http.Cookie) (*http.Response, []byte) {
			return e.do("PATCH", "/v1/users/"+id, `{"role":"viewer"}`, "admin", nil)
		}, 200},
		// A role this version does not know (written by a newer one)
		// grants nothing, not even read.
		{"role below read", "viewer", func(e *env, id string, _ *http.Cookie) (*http.Response, []byte) {
			u, err := e.st.UserByID(context.Background(), id)
			if err == nil {
				u.Role = "auditor"
				err = e.st.UpdateUser(context.Background(), u)
			}
			if err != nil {
				e.t.Fatal(err)
			}
			return &http.Response{StatusCode: 200}, nil
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fastRecheck)
			id, pw := e.newUser("sam@example.com", "Sam", tc.role)
			c := e.mustSignIn("sam@example.com", pw)
			s := e.openStreamAs("/v1/stream", "", cookieAuth(c))
			e.nextComment(s, "connected")
			if r, b := tc.act(e, id, c); r.StatusCode/100 != 2 {
				t.Fatalf("%s: %d %s", tc.name, r.StatusCode, b)
			}
			evs := s.waitEnd(5 * time.Second)
			switch tc.reconnect {
			case 401:
				endedWith(t, evs, codeUnauthorized)
			case 0: // no scope left
				endedWith(t, evs, codeForbidden)
				return
			default: // still allowed: ended with a retry hint, to be checked again
				if last := evs[len(evs)-1]; last.Event != "" || last.Retry == "" {
					t.Fatalf("stream ended with %+v, want a retry hint", last)
				}
			}
			r, _ := e.withCookie(c, "GET", "/v1/groups", "", nil)
			if r.StatusCode != tc.reconnect {
				t.Fatalf("after the stream ended, the session gets %d, want %d", r.StatusCode, tc.reconnect)
			}
		})
	}
}

// A stream ends at its maximum lifetime with a retry hint; the client
// reconnects with Last-Event-ID and misses nothing.
func TestStreamMaxLifetime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StreamMaxLifetime = 300 * time.Millisecond })
	s := e.openStream("/v1/stream", "", "read")
	first := e.createGroup("+15550100001")
	lastID, ch := s.nextChange()
	if ch.GroupID != first {
		t.Fatalf("change of %s, want %s", ch.GroupID, first)
	}
	evs := s.waitEnd(5 * time.Second)
	if len(evs) == 0 || evs[len(evs)-1].Retry == "" || evs[len(evs)-1].Event != "" {
		t.Fatalf("stream ended without a retry hint: %+v", evs)
	}
	for _, ev := range evs {
		if ev.Event == "error" {
			t.Fatalf("a stream at its lifetime ended with an error: %+v", ev)
		}
	}
	missed := e.createGroup("+15550100002") // while reconnecting
	s2 := e.openStream("/v1/stream", lastID, "read")
	if _, ch := s2.nextChange(); ch.GroupID != missed {
		t.Fatalf("after the reconnect: change of %s, want %s", ch.GroupID, missed)
	}
	if !strings.HasPrefix(evs[len(evs)-1].Comment, "stream lifetime") {
		t.Errorf("end comment %q", evs[len(evs)-1].Comment)
	}
}
