package server

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// Finding 5 of issue 12: a client that asks for a large response and never
// reads it is cut off server-side within the write timeout, instead of
// holding its connection and buffers (megabytes) indefinitely.
func TestNonReadingClientIsCutOff(t *testing.T) {
	cut := make(chan time.Duration, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		buf := make([]byte, 32<<10)
		for {
			if _, err := w.Write(buf); err != nil {
				cut <- time.Since(start)
				return
			}
		}
	})
	cfg := Config{WriteTimeout: time.Second}.withDefaults()
	srv := newHTTPServer(handler, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-served })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprint(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-cut:
		if d > cfg.WriteTimeout+2*time.Second {
			t.Fatalf("cut off after %s, want within about %s", d, cfg.WriteTimeout)
		}
	case <-time.After(cfg.WriteTimeout + 5*time.Second):
		t.Fatalf("a client that never reads still held its connection %s after the write timeout", 5*time.Second)
	}
}
