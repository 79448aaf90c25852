package server_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

// Event streams outlive the server's write timeout: each event (and
// heartbeat) extends the write deadline, so a stream stays open and keeps
// delivering well after WriteTimeout has passed.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	eng := engine{name: "sqlite", db: t.TempDir() + "/crewcast.db"}
	srv := start(t, eng, sim.Faults{}, func(c *server.Config) { c.WriteTimeout = time.Second })
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/stream: %d", resp.StatusCode)
	}
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	time.Sleep(2500 * time.Millisecond) // well past the write timeout
	id := createGroup(t, srv, numbers(1))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended after the write timeout")
			}
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, id) {
				return
			}
		case <-deadline:
			t.Fatal("no event for the new group on a stream older than the write timeout")
		}
	}
}
