package server

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func counterValue(t *testing.T, w *primaryWatch) float64 {
	t.Helper()
	var m dto.Metric
	if err := w.failovers.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// The first identity is where the node starts, not a failover; the same
// identity again is nothing; a new timeline or system identifier is one
// failover, counted once.
func TestPrimaryWatchCountsFailovers(t *testing.T) {
	t.Parallel() // its own server and database
	w := newPrimaryWatch()
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		id      string
		changed bool
		total   float64
	}{
		{"7715/00000001", false, 0},
		{"7715/00000001", false, 0},
		{"7715/00000002", true, 1}, // a standby promoted
		{"7715/00000002", false, 1},
		{"9999/00000001", true, 2}, // another database behind the address
	}
	for i, st := range steps {
		changed, before, seen := w.observe(st.id, t0.Add(time.Duration(i)*time.Second))
		if changed != st.changed {
			t.Fatalf("step %d (%s): changed %v, want %v", i, st.id, changed, st.changed)
		}
		if changed && (before != steps[i-1].id || !seen.Equal(t0.Add(time.Duration(i-1)*time.Second))) {
			t.Fatalf("step %d: before %q seen %v", i, before, seen)
		}
		if got := counterValue(t, w); got != st.total {
			t.Fatalf("step %d: crewcast_store_failovers_total = %v, want %v", i, got, st.total)
		}
	}
}
