package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast/store"
)

// snapshotUnusableLog is what crewcast logs when it falls back from a
// snapshot to the journal (tracker/groupactor.go).
const snapshotUnusableLog = "group snapshot unusable; recovered from the journal"

// runT5 is docs/testing.md T5. (a) kill -9 the moment a group's last final
// webhook is acknowledged, which lands on the commit that completes the
// group and writes its final snapshot; after the restart the group must
// still complete and take a reply. (b) corrupt a stored snapshot — bytes
// that fail the checksum, and bytes with a valid checksum that do not
// decode — and check that start-up falls back to the journal, reports the
// corruption in the log, and that the rebuilt state is right (a reply is
// applied to the right recipient, no status changed).
func runT5(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		return res.fail("start server: %v", err)
	}
	var ids []string
	for round := range 3 {
		id, err := t5KillAtCompletion(ctx, h, srv, round)
		if id != "" {
			ids = append(ids, id)
		}
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("kill at completion %d: %v", round, err))
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("kill -9 at group completion: %d rounds", len(ids)))
	if len(ids) < 2 {
		return res.fail("need two completed groups to corrupt, have %d", len(ids))
	}
	for i, how := range []string{"flipped byte (checksum mismatch)", "valid checksum over undecodable bytes"} {
		if err := t5Corrupt(ctx, h, srv, ids[i], i == 1); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("corrupt snapshot, %s: %v", how, err))
			continue
		}
		res.notes = append(res.notes, "corrupt snapshot, "+how+": fell back to the journal, reported, state intact")
	}
	probs, _ := srv.finalCheck(ctx, ids)
	res.problems = append(res.problems, probs...)
	return res
}

// t5KillAtCompletion creates a small group and kills the server as soon as
// the proxy has acknowledged its last final webhook.
func t5KillAtCompletion(ctx context.Context, h *harness, srv *server, round int) (string, error) {
	const n = 10
	killed := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	finals := map[string]bool{}
	var numbers map[string]bool
	h.proxy.setHook(func(r webhookRecord) {
		mu.Lock()
		defer mu.Unlock()
		if numbers == nil || !numbers[r.Number] || !r.acked() || r.EventType != "message.finalized" {
			return
		}
		finals[r.Number] = true
		if len(finals) == n {
			once.Do(func() {
				srv.kill9()
				close(killed)
			})
		}
	})
	defer h.proxy.setHook(nil)
	mu.Lock()
	g, to, err := srv.newGroup(ctx, fmt.Sprintf("t5 round %d", round), n, "")
	if err == nil {
		numbers = map[string]bool{}
		for _, t := range to {
			numbers[t] = true
		}
	}
	mu.Unlock()
	if err != nil {
		return "", err
	}
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		return g.ID, errors.New("the group's final webhooks did not all arrive within 30s")
	case <-ctx.Done():
		return g.ID, ctx.Err()
	}
	if err := srv.start(ctx); err != nil {
		return g.ID, err
	}
	views, err := srv.drain(ctx, []string{g.ID}, 30*time.Second, false)
	if err != nil {
		return g.ID, err
	}
	if views[0].Status != "complete" {
		return g.ID, fmt.Errorf("group is %s after restart; want complete", views[0].Status)
	}
	// The group must still work: a reply reaches the right recipient.
	return g.ID, t5Reply(ctx, h, srv, views[0], fmt.Sprintf("YES round %d", round))
}

// t5Reply posts a signed reply from the group's first recipient and waits
// for it to show.
func t5Reply(ctx context.Context, h *harness, srv *server, g groupView, text string) error {
	r := g.Recipients[0]
	body := receivedEvent(newEventID(), "chaos-in-"+newEventID(), r.Number, g.From, text, time.Now())
	t0 := time.Now()
	if code := h.sign.sign(body, time.Now()).post(ctx, srv.api.base); code/100 != 2 {
		return fmt.Errorf("reply webhook answered %d", code)
	}
	h.noteCrafted(time.Since(t0))
	deadline := time.Now().Add(15 * time.Second)
	for {
		cur, err := srv.api.group(ctx, g.ID)
		if err != nil {
			return err
		}
		got, _ := findRecipient(cur, r.Number)
		if got.ReplyText == text {
			for i, was := range g.Recipients {
				if now := cur.Recipients[i]; now.Number != was.Number || now.Status != was.Status {
					return fmt.Errorf("recipient %s was %s, is %s after recovery", was.Number, was.Status, now.Status)
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reply %q from %s not applied within 15s (reply_text %q)", text, r.Number, got.ReplyText)
		}
		_ = sleep(ctx, 200*time.Millisecond) // polling an external process
	}
}

// t5Corrupt stops the server, damages the group's snapshot, restarts, and
// checks the fallback.
func t5Corrupt(ctx context.Context, h *harness, srv *server, groupID string, keepChecksum bool) error {
	g, err := srv.api.group(ctx, groupID)
	if err != nil {
		return err
	}
	srv.kill9()
	db, err := openDB(srv.db, false)
	if err != nil {
		return err
	}
	defer db.Close()
	var seq int64
	var state []byte
	if err := db.QueryRowContext(ctx, `SELECT seq, state FROM snapshots WHERE key = ?`, groupID).Scan(&seq, &state); err != nil {
		return fmt.Errorf("read the completed group's snapshot: %w", err)
	}
	if keepChecksum {
		state = []byte(`{"id": 42, "recipients": "not a list"`)
		_, err = db.ExecContext(ctx, `UPDATE snapshots SET state = ?, checksum = ? WHERE key = ?`,
			state, store.SnapshotChecksum(groupID, uint64(seq), state), groupID)
	} else {
		state[len(state)/2] ^= 0x20
		_, err = db.ExecContext(ctx, `UPDATE snapshots SET state = ? WHERE key = ?`, state, groupID)
	}
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	off := srv.logSize()
	if err := srv.start(ctx); err != nil {
		return err
	}
	if err := t5Reply(ctx, h, srv, g, "YES after corruption"); err != nil {
		return err
	}
	if log := srv.logSince(off); !strings.Contains(log, snapshotUnusableLog) || !strings.Contains(log, groupID) {
		return fmt.Errorf("no %q line naming %s in the server log", snapshotUnusableLog, groupID)
	}
	return nil
}
