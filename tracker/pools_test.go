package tracker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

// An erased person's sticky number goes with the rest of them: the route
// key names their number, and erasure deletes every route whose key does.
func TestStickyRouteIsErasedWithTheNumber(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const who, other = "+15550600001", "+15550600002"
	for _, n := range []string{who, other} {
		if err := st.PutRoute(ctx, store.Route{Key: stickyKey("dispatch", n), Value: "+15550300001"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.EraseNumber(ctx, who, "h:erased", "h:kept"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetRoute(ctx, stickyKey("dispatch", who)); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("sticky route of an erased number: %v, want gone", err)
	}
	if _, err := st.GetRoute(ctx, stickyKey("dispatch", other)); err != nil {
		t.Fatalf("another person's sticky route: %v", err)
	}
}

// tokenPacer grants each number a fixed number of sends.
type tokenPacer map[string]int

func (p tokenPacer) take(from string, want int, _ time.Time) (int, time.Duration) {
	n := min(want, p[from])
	p[from] -= n
	if n == 0 {
		return 0, 10 * time.Millisecond
	}
	return n, 0
}

func (p tokenPacer) ready(string, time.Time) time.Duration { return 0 }

// A pool group's follow-ups are paced on each person's own number: a
// number out of tokens holds back only its own people's follow-ups.
func TestPoolFollowupsArePacedPerNumber(t *testing.T) {
	g := &group.Group{Pool: "p", From: "+15550300001", Recipients: []*group.Recipient{
		{Index: 0, From: "+15550300001"}, {Index: 1, From: "+15550300002"}, {Index: 2, From: "+15550300001"}, {Index: 3, From: "+15550300002"},
	}}
	sends := []group.FollowupSend{{ID: "f0", Index: 0}, {ID: "f1", Index: 1}, {ID: "f2", Index: 2}, {ID: "f3", Index: 3}}
	kept, wait := pacePoolFollowups(tokenPacer{"+15550300001": 1, "+15550300002": 2}, g, sends, time.Now())
	var ids []string
	for _, s := range kept {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "f0,f1,f3" || wait != 10*time.Millisecond {
		t.Fatalf("kept %v, wait %s: want f0,f1,f3 (the first number had one token), 10ms", ids, wait)
	}
}
