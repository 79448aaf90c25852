package server_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

// syncBuffer is a log sink the server's goroutines may write concurrently.
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

// The retention schedule runs on the injected clock: an hour of a manual
// clock runs it, with hardly any real time gone by.
func TestRetentionRunsOnTheInjectedClock(t *testing.T) {
	t.Parallel() // its own server and database
	clk := actor.NewManualClock(time.Now())
	var logs syncBuffer
	start(t, engine{name: "sqlite", db: filepath.Join(t.TempDir(), "crewcast.db")}, sim.Faults{}, func(c *server.Config) {
		c.Clock = clk
		c.RetentionInterval = time.Hour
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "retention run"); {
		if time.Now().After(deadline) {
			t.Fatalf("no retention run after the manual clock passed the interval; logs:\n%s", logs.String())
		}
		clk.Advance(time.Hour)
		time.Sleep(5 * time.Millisecond)
	}
}
