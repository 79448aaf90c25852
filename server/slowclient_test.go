package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/server"
)

// TestSlowClientsDoNotStarveWebhooks is docs/testing.md T4's slow-client case:
// connections that dribble one header byte a second are cut by the server's
// timeouts, while signed webhooks sent meanwhile are still answered within
// Telnyx's 2 s budget.
func TestSlowClientsDoNotStarveWebhooks(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "crewcast.db"), Provider: server.ProviderTelnyx,
		TelnyxAPIKey: "unused", TelnyxPublicKey: base64.StdEncoding.EncodeToString(pub), TelnyxAPIBase: "http://127.0.0.1:1",
		RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	addr := srv.URL()[len("http://"):]

	// 64 slow clients: each writes the request line, then one header byte
	// a second, forever.
	const slow = 64
	cut := make(chan time.Duration, slow)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range slow {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, "POST /webhooks/telnyx HTTP/1.1\r\nHost: x\r\n"); err != nil {
				cut <- time.Since(start)
				return
			}
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte("X")); err != nil {
					cut <- time.Since(start)
					return
				}
				// A closed connection may accept writes; a read tells.
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
				if _, err := bufio.NewReader(conn).ReadByte(); err != nil && !isTimeout(err) {
					cut <- time.Since(start)
					return
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })

	// Meanwhile, good webhooks keep getting answered fast.
	client := &http.Client{Timeout: 5 * time.Second}
	var worst time.Duration
	for i := range 40 {
		body := []byte(fmt.Sprintf(`{"data":{"record_type":"event","id":"evt-slow-%d","event_type":"message.finalized","occurred_at":"2026-11-29T12:00:00Z",`+
			`"payload":{"id":"msg-%d","from":{"phone_number":"+15550100000"},"to":[{"phone_number":"+15550100001","status":"delivered"}],"text":"x"}},"meta":{"attempt":1}}`, i, i))
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/webhooks/telnyx", bytes.NewReader(body))
		for k, v := range telnyx.Sign(priv, time.Now(), body) {
			req.Header[k] = v
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("webhook %d: %v", i, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("webhook %d: HTTP %d", i, resp.StatusCode)
		}
		worst = max(worst, time.Since(start))
		time.Sleep(150 * time.Millisecond) // spread the webhooks over the slow clients' lifetime
	}
	if worst > 2*time.Second {
		t.Fatalf("slowest webhook took %s with %d slow clients connected; Telnyx allows 2 s", worst, slow)
	}
	// Every slow client is cut off by the header timeout (5 s), well before
	// it could finish its headers.
	deadline := time.After(20 * time.Second)
	for i := range slow {
		select {
		case d := <-cut:
			if d > 12*time.Second {
				t.Fatalf("slow client %d held its connection %s", i, d)
			}
		case <-deadline:
			t.Fatalf("only %d of %d slow clients were cut off", i, slow)
		}
	}
	t.Logf("slowest webhook %s with %d slow clients", worst, slow)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
