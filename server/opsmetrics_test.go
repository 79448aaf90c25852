package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

func TestOpsCollector(t *testing.T) {
	t.Parallel() // its own server and database
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "ops.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	c := newOpsCollector(st, clock)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	value := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("%s not gathered", name)
		return 0
	}
	if a, p := value("crewcast_inbox_oldest_pending_age_seconds"), value("crewcast_groups_paused"); a != 0 || p != 0 {
		t.Fatalf("empty store: age %v, paused %v", a, p)
	}

	// Two webhooks waiting, the older 10 minutes; two paused groups, one
	// sending.
	for i, at := range []time.Time{now.Add(-10 * time.Minute), now.Add(-time.Minute)} {
		if _, err := st.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: string(rune('a' + i)), Payload: []byte(`[]`), ReceivedAt: at}}); err != nil {
			t.Fatal(err)
		}
	}
	var units []actor.Unit
	for key, status := range map[string]string{"g1": "paused", "g2": "paused", "g3": "sending"} {
		units = append(units, actor.Unit{Key: key, Events: []actor.Event{{Type: "test", Data: []byte(`{}`)}},
			Effects: []any{&store.Effects{Group: &store.GroupRow{ID: key, Status: crewcast.GroupStatus(status), Seq: 1, CreatedAt: now, UpdatedAt: now}}}})
	}
	res, err := st.Commit(ctx, units)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res {
		if e != nil {
			t.Fatal(e)
		}
	}
	// Figures are cached for the ttl.
	if a := value("crewcast_inbox_oldest_pending_age_seconds"); a != 0 {
		t.Fatalf("within ttl: age %v, want the cached 0", a)
	}
	now = now.Add(c.ttl)
	if a := value("crewcast_inbox_oldest_pending_age_seconds"); a != (10*time.Minute + c.ttl).Seconds() {
		t.Fatalf("age %v", a)
	}
	if p := value("crewcast_groups_paused"); p != 2 {
		t.Fatalf("paused %v", p)
	}
}
