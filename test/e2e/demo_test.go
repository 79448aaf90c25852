package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoShowsEveryOutcome runs `crewcast demo` as a user would and reads
// its example group with the admin key it printed: within 60 s the board
// must show delivered, failed, unknown and replied recipients (and the
// ambiguous send as unconfirmed), as the demo promises; then the demo must
// stop cleanly on SIGTERM.
func TestDemoShowsEveryOutcome(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	demo := startProc(t, "demo", nil, "demo", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--log-level", "warn")
	base := strings.TrimSuffix(waitLine(t, demo, "board:", 60*time.Second), "/")
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("board URL %q, want loopback", base)
	}
	key := waitLine(t, demo, "admin key:", 10*time.Second)
	link := waitLine(t, demo, "example group:", 10*time.Second)
	_, id, ok := strings.Cut(link, "/#/groups/")
	if !ok || id == "" || !strings.HasPrefix(link, base) {
		t.Fatalf("example group line %q: want %s/#/groups/<id>", link, base)
	}
	began := time.Now()
	g := pollGroup(t, base, key, id, 60*time.Second, "delivered, failed, unknown, unconfirmed and replied recipients", func(g groupView) bool {
		c := g.Counts
		return c["delivered"] > 0 && c["failed"] > 0 && c["unknown"] > 0 && c["unconfirmed"] > 0 && c["replied"] > 0
	})
	t.Logf("every outcome shown after %s: %v", time.Since(began).Round(time.Millisecond), g.Counts)
	for _, r := range g.Recipients {
		if r.Status == "failed" && r.ErrorCode == "" {
			t.Errorf("%s failed without an error code", r.Number)
		}
		if r.ReplyText != "" && r.Status != "delivered" {
			t.Errorf("%s replied %q but is %s", r.Number, r.ReplyText, r.Status)
		}
	}
	if err := demo.Stop(30 * time.Second); err != nil {
		t.Errorf("demo on SIGTERM: %v, want a clean exit", err)
	}
}
