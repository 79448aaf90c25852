package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

// boardUser creates a dispatcher with a chosen password through the
// admin key and returns the email and password.
func boardUser(t *testing.T, srv *server.Server, email string) (string, string) {
	t.Helper()
	pw := "a long board password"
	code, b := apiDo(t, srv, "POST", "/v1/users", map[string]string{"email": email, "name": "Dee", "role": "dispatcher", "password": pw})
	if code != http.StatusCreated {
		t.Fatalf("create user: %d %s", code, b)
	}
	return email, pw
}

// cookieDo sends a request with the board's session cookie value (no
// bearer key) and returns the status and body.
func cookieDo(t *testing.T, srv *server.Server, method, path, cookie string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "crewcast_session", Value: cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// boardSignIn signs in with email and password and returns the cookie.
func boardSignIn(t *testing.T, srv *server.Server, email, pw string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"email": email, "password": pw})
	resp, err := http.Post(srv.URL()+"/v1/session", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "crewcast_session" && c.Value != "" {
			return c.Value
		}
	}
	body, _ := io.ReadAll(resp.Body)
	t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	return ""
}

// A board session is kept in the database: a restart (an upgrade) does
// not sign the dispatcher out, and signing out afterwards still works.
func TestSessionSurvivesRestart(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		srv1 := start(t, eng, sim.Faults{}, nil)
		email, pw := boardUser(t, srv1, "dee@example.com")
		cookie := boardSignIn(t, srv1, email, pw)
		if code, b := cookieDo(t, srv1, "GET", "/v1/groups", cookie, nil); code != http.StatusOK {
			t.Fatalf("before the restart: %d %s", code, b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv1.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		srv2 := start(t, eng, sim.Faults{}, nil)
		if code, b := cookieDo(t, srv2, "GET", "/v1/groups", cookie, nil); code != http.StatusOK {
			t.Fatalf("after a restart the session answers %d %s, want 200 (still signed in)", code, b)
		}
		if code, b := cookieDo(t, srv2, "DELETE", "/v1/session", cookie, nil); code != http.StatusNoContent {
			t.Fatalf("sign out: %d %s", code, b)
		}
		if code, _ := cookieDo(t, srv2, "GET", "/v1/groups", cookie, nil); code != http.StatusUnauthorized {
			t.Fatalf("after sign-out: %d, want 401", code)
		}
	})
}

// Several nodes share PostgreSQL: a session opened on node A works on
// node B; signing out on B ends it on A, and ends an event stream A
// serves with it; disabling the user on one node ends their sessions on
// the other.
func TestClusterSessionOnAnyNode(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		if eng.name != "postgres" {
			t.Skip("several nodes need PostgreSQL; SQLite is one node")
		}
		node := func(id string) *server.Server {
			return start(t, eng, sim.Faults{}, func(c *server.Config) {
				c.Cluster = server.ClusterConfig{NodeID: id, LeaseTTL: 2 * time.Second, Secret: "s3cret"}
			})
		}
		a, b := node("node-a"), node("node-b")
		email, pw := boardUser(t, a, "dee@example.com")
		cookie := boardSignIn(t, a, email, pw)
		if code, body := cookieDo(t, b, "GET", "/v1/groups", cookie, nil); code != http.StatusOK {
			t.Fatalf("a session made on node A, on node B: %d %s, want 200", code, body)
		}
		// A stream on A, with the session; sign out on B ends it.
		req, _ := http.NewRequest("GET", a.URL()+"/v1/stream", nil)
		req.AddCookie(&http.Cookie{Name: "crewcast_session", Value: cookie})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
			}
		}()
		if code, body := cookieDo(t, b, "DELETE", "/v1/session", cookie, nil); code != http.StatusNoContent {
			t.Fatalf("sign out on B: %d %s", code, body)
		}
		if code, _ := cookieDo(t, a, "GET", "/v1/groups", cookie, nil); code != http.StatusUnauthorized {
			t.Fatalf("signed out on B, node A answers %d, want 401", code)
		}
		select {
		case <-ended:
		case <-time.After(15 * time.Second):
			t.Fatal("the stream on node A outlived the sign-out on node B")
		}
		// Disabling the user on A ends their session made on B.
		c2 := boardSignIn(t, b, email, pw)
		var users struct {
			Users []struct{ ID, Email string } `json:"users"`
		}
		_, lb := apiDo(t, a, "GET", "/v1/users", nil)
		if err := json.Unmarshal(lb, &users); err != nil || len(users.Users) != 1 || !strings.EqualFold(users.Users[0].Email, email) {
			t.Fatalf("users: %s %v", lb, err)
		}
		if code, body := apiDo(t, a, "DELETE", "/v1/users/"+users.Users[0].ID, nil); code != http.StatusNoContent {
			t.Fatalf("delete user: %d %s", code, body)
		}
		if code, _ := cookieDo(t, b, "GET", "/v1/groups", c2, nil); code != http.StatusUnauthorized {
			t.Fatalf("a deleted user's session on the other node: %d, want 401", code)
		}
	})
}
