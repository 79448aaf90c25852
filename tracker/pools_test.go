package tracker

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/crewcast/crewcast/actor"
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
