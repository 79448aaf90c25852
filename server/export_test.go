package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// A CSV export larger than the socket buffers, read steadily but for
// longer than the write timeout, completes: the export extends its write
// deadline page by page, so only a client that stops reading is cut off.
func TestLongCSVExportOutlivesWriteTimeout(t *testing.T) {
	eng := engine{name: "sqlite", db: t.TempDir() + "/crewcast.db"}
	srv := start(t, eng, sim.Faults{}, func(c *server.Config) { c.WriteTimeout = time.Second })
	const rows = 20000
	name := strings.Repeat("n", 300)
	ds := make([]store.DeliveryRow, rows)
	for i := range ds {
		ds[i] = store.DeliveryRow{GroupID: "grp_export", Number: fmt.Sprintf("+1555%07d", i), Name: name,
			Status: crewcast.StatusPending, UpdatedAt: time.Now()}
	}
	res, err := srv.Store().Commit(context.Background(), []actor.Unit{{Key: "grp_export", Effects: []any{store.Effects{Deliveries: ds}}}})
	if err != nil || res[0] != nil {
		t.Fatalf("commit: %v %v", err, res)
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/v1/reports/deliveries?format=csv", nil)
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
		t.Fatalf("export: %d", resp.StatusCode)
	}
	// About 2 MB/s: the 6 MB export takes about 3 s.
	start := time.Now()
	buf := make([]byte, 32<<10)
	total, lines := 0, 0
	for {
		n, err := resp.Body.Read(buf)
		total += n
		lines += strings.Count(string(buf[:n]), "\n")
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("export cut off after %s and %d bytes: %v", time.Since(start).Round(time.Millisecond), total, err)
		}
		time.Sleep(15 * time.Millisecond)
	}
	if lines != rows+1 {
		t.Fatalf("export has %d lines, want %d", lines, rows+1)
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Logf("the export took only %s; it does not exercise the write timeout", d)
	}
}
