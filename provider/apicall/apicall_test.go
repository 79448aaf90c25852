package apicall

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func class(t *testing.T, err error) crewcast.ErrorClass {
	t.Helper()
	var se *crewcast.SendError
	if !errors.As(err, &se) || se.Provider != "p" {
		t.Fatalf("want a *crewcast.SendError from provider p, got %v", err)
	}
	return se.Class
}

func TestDo(t *testing.T) {
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()

	// Answered: status, headers and body come back.
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "r1")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer ok.Close()
	req, _ := http.NewRequest(http.MethodPost, ok.URL, strings.NewReader("x"))
	resp, err := Do(client, "p", req)
	if err != nil || resp.Status != 201 || string(resp.Body) != `{"ok":true}` || resp.Header.Get("X-Request-Id") != "r1" {
		t.Fatalf("answered: %+v %v", resp, err)
	}

	// No connection at all: certainly not sent.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	_ = ln.Close()
	req, _ = http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("x"))
	if _, err := Do(client, "p", req); class(t, err) != crewcast.ClassNotSent {
		t.Fatalf("refused connection: %v", err)
	}

	// Connected, then the connection dies before an answer: uncertain.
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	}))
	defer drop.Close()
	req, _ = http.NewRequest(http.MethodPost, drop.URL, strings.NewReader("x"))
	if _, err := Do(client, "p", req); class(t, err) != crewcast.ClassUncertain {
		t.Fatalf("dropped after the request: %v", err)
	}

	// An answer too large to read whole: uncertain, with its status.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, MaxResponseBytes+10))
	}))
	defer big.Close()
	req, _ = http.NewRequest(http.MethodPost, big.URL, strings.NewReader("x"))
	_, err = Do(client, "p", req)
	var se *crewcast.SendError
	if class(t, err) != crewcast.ClassUncertain || !errors.As(err, &se) || se.HTTPStatus != 200 {
		t.Fatalf("oversized answer: %v", err)
	}
}
