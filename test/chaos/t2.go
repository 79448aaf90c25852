package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"time"

	_ "modernc.org/sqlite" // reads the server's SQLite file from outside
)

// openDB opens the server's SQLite file; readOnly while the server runs.
func openDB(path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Set("mode", "ro")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// inboxRows counts the inbox rows for a Telnyx event id.
func inboxRows(ctx context.Context, dbPath, eventID string) (int, error) {
	db, err := openDB(dbPath, true)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE provider = 'telnyx' AND event_id = ?`, eventID).Scan(&n)
	return n, err
}

// t2Event is one crafted event and the recipient it is about.
type t2Event struct {
	id     string
	number string
	post   signedPost
	copies int
}

// runT2 is docs/testing.md T2: the same signed webhook 2–10 times at once, in
// shuffled order (a recipient's "sent" mixed with its "delivered"), and
// again after a kill -9 and restart: one inbox row and one journal event
// per webhook, and statuses never move backwards.
func runT2(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		return res.fail("start server: %v", err)
	}
	// The simulator drops this group's webhooks, so the only ones crewcast
	// sees are the harness's; check_after keeps status lookups away.
	if err := h.simAPI.setFaults(ctx, map[string]any{"drop_rate": 1}); err != nil {
		return res.fail("set faults: %v", err)
	}
	g, _, err := srv.newGroup(ctx, "t2", 8, "1h")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	views, err := srv.drain(ctx, []string{g.ID}, 30*time.Second, true)
	if ferr := h.simAPI.setFaults(ctx, map[string]any{"drop_rate": 0}); ferr != nil {
		return res.fail("reset faults: %v", ferr)
	}
	if err != nil {
		return res.fail("sends: %v", err)
	}
	now := time.Now()
	var events []*t2Event
	for _, r := range views[0].Recipients {
		if r.Status != "sent" || r.ProviderMessageID == "" {
			return res.fail("recipient %s is %s before any webhook; want sent", r.Number, r.Status)
		}
		sent := statusEvent(newEventID(), "message.sent", r.ProviderMessageID, g.From, r.Number, g.Text, "sent", now)
		final := statusEvent(newEventID(), "message.finalized", r.ProviderMessageID, g.From, r.Number, g.Text, "delivered", now.Add(time.Second))
		for _, b := range [][]byte{sent, final} {
			e := &t2Event{number: r.Number, post: h.sign.sign(b, now), copies: h.randInt(2, 10)}
			e.id = parseTelnyxWebhook(b).EventID
			events = append(events, e)
		}
	}
	for round, label := range []string{"first delivery", "after kill -9 and restart"} {
		if round == 1 {
			if err := srv.restart(ctx); err != nil {
				return res.fail("restart: %v", err)
			}
		}
		posted, refused := h.burst(ctx, srv.api.base, events)
		if refused > 0 {
			res.problems = append(res.problems, fmt.Sprintf("%s: %d of %d concurrent copies were refused", label, refused, posted))
		}
		// Let the acknowledged events be applied before counting.
		if _, err := srv.drain(ctx, []string{g.ID}, 15*time.Second, false); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s: recipients still not delivered: %v", label, err))
		}
		h.quiesce(ctx, time.Second, 5*time.Second)
		res.problems = append(res.problems, t2Verify(ctx, srv, g.ID, events, label)...)
		res.notes = append(res.notes, fmt.Sprintf("%s: %d events, %d posts at once", label, len(events), posted))
	}
	probs, _ := srv.finalCheck(ctx, []string{g.ID})
	res.problems = append(res.problems, probs...)
	return res
}

// burst posts every copy of every event at once, in shuffled order; it
// returns how many posts were made and how many were not answered 2xx
// even after two more tries (a refusal is only a failure if it persists:
// a provider would retry).
func (h *harness) burst(ctx context.Context, base string, events []*t2Event) (posted, refused int) {
	var posts []*t2Event
	for _, e := range events {
		for range e.copies {
			posts = append(posts, e)
		}
	}
	shuffle(h, posts)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, e := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok := false
			for try := 0; try < 3 && !ok; try++ {
				t0 := time.Now()
				code := e.post.post(ctx, base)
				if ok = code/100 == 2; ok {
					h.noteCrafted(time.Since(t0))
				}
			}
			if !ok {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return len(posts), refused
}

// t2Verify checks one inbox row and one journal event per crafted event,
// and that every recipient ended delivered.
func t2Verify(ctx context.Context, srv *server, groupID string, events []*t2Event, label string) []string {
	var problems []string
	evs, err := srv.api.journal(ctx, groupID)
	if err != nil {
		return []string{label + ": journal: " + err.Error()}
	}
	inJournal := journalEventIDs(evs)
	for _, e := range events {
		n, err := inboxRows(ctx, srv.db, e.id)
		if err != nil {
			problems = append(problems, label+": inbox: "+err.Error())
			break
		}
		if n != 1 {
			problems = append(problems, fmt.Sprintf("%s: event %s posted %d times has %d inbox rows; want 1", label, e.id, e.copies, n))
		}
		if inJournal[e.id] != 1 {
			problems = append(problems, fmt.Sprintf("%s: event %s posted %d times has %d journal events; want 1", label, e.id, e.copies, inJournal[e.id]))
		}
	}
	g, err := srv.api.group(ctx, groupID)
	if err != nil {
		return append(problems, label+": "+err.Error())
	}
	for _, r := range g.Recipients {
		if r.Status != "delivered" {
			problems = append(problems, fmt.Sprintf("%s: %s is %s; want delivered (statuses never move back)", label, r.Number, r.Status))
		}
	}
	return problems
}
