package tracker

import (
	"context"
	"testing"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Idempotency keys stored before they were scoped to the API key (issue 12
// finding 12) still answer a retry after the upgrade, but only for the
// API key that created the group: a retry across an upgrade must not send
// the message a second time.
func TestIdempotencyKeysStoredUnscopedStillMatchTheirCreator(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	req := group.Request{From: from, To: nums(2), Text: "hi"}
	opts := CreateOptions{By: "key_ops"}
	id, created, err := e.tr.Create(ctx, req, opts)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	// The row an earlier version wrote: the client's key, unscoped.
	opts.IdempotencyKey = "legacy-1"
	res, err := e.st.Commit(ctx, []actor.Unit{{Key: "legacy-holder", Events: []actor.Event{{Type: "test.legacy", Data: []byte(`{}`)}},
		Effects: []any{store.Effects{Idempotency: &store.IdempotencyKey{Key: "legacy-1", RequestHash: requestHash(req, opts), GroupID: id}}}}})
	if err != nil || res[0] != nil {
		t.Fatal(err, res)
	}
	if got, created, err := e.tr.Create(ctx, req, opts); err != nil || created || got != id {
		t.Fatalf("retry by the creator: %s %v %v, want %s", got, created, err, id)
	}
	other := opts
	other.By = "key_other"
	if got, created, err := e.tr.Create(ctx, req, other); err != nil || !created || got == id {
		t.Fatalf("same key from another API key: %s %v %v, want a new group", got, created, err)
	}
}
