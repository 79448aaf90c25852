package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store/storetest"
)

// NOTIFY channels are per database, not per schema: two deployments (or a
// benchmark's two sides, or parallel tests) in their own schemas of one
// database must not hear each other's wake-ups. Before channels were
// scoped by schema, a one-node deployment holding every shard applied the
// forwards of another schema's cluster to groups it did not have (an
// activation and an inbox acknowledgement each).
func TestNotifyStaysInItsSchema(t *testing.T) {
	url := serverURL(t)
	schemaA, schemaB := newSchema(t, url), newSchema(t, url)
	listener := openIn(t, url, schemaA, storetest.Config{})
	sameSchema := openIn(t, url, schemaA, storetest.Config{})
	otherSchema := openIn(t, url, schemaB, storetest.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 16)
	listening := make(chan error, 1)
	go func() {
		listening <- listener.Listen(ctx, []string{"crewcast_inbox"}, func(_, p string) { got <- p })
	}()
	awaitListening(ctx, t, sameSchema, "crewcast_inbox", got)
	if err := otherSchema.Notify(ctx, "crewcast_inbox", "other schema"); err != nil {
		t.Fatal(err)
	}
	if err := sameSchema.Notify(ctx, "crewcast_inbox", "same schema"); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: by the time "same schema"
	// arrives, "other schema" would have (leftover probes are skipped).
	for {
		select {
		case p := <-got:
			switch p {
			case "other schema":
				t.Fatal("a NOTIFY of another schema reached this schema's listener")
			case "same schema":
				cancel()
				if err := <-listening; err != nil {
					t.Fatal(err)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("the same schema's NOTIFY was not heard")
		}
	}
}

// A node listens on all its channels in one session (PostgreSQL wakes
// every listening session for every NOTIFY): fn hears each payload with the
// channel it came on, and nothing of a channel it did not ask for.
func TestListenSeveralChannelsInOneSession(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	listener := openIn(t, url, schema, storetest.Config{})
	sender := openIn(t, url, schema, storetest.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type heard struct{ channel, payload string }
	got := make(chan heard, 64)
	listening := make(chan error, 1)
	go func() {
		listening <- listener.Listen(ctx, []string{"one", "two"}, func(ch, p string) { got <- heard{ch, p} })
	}()
	for ready := false; !ready; {
		if err := sender.Notify(ctx, "one", "probe"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			ready = true
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the listener never heard channel one")
		}
	}
	var sessions int
	if err := adminExec(t, url, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND query LIKE '%'||$1||'%'`,
		schema).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 {
		t.Errorf("%d sessions listening, want 1", sessions)
	}
	for _, n := range []heard{{"three", "not asked for"}, {"two", "b"}, {"one", "a"}} {
		if err := sender.Notify(ctx, n.channel, n.payload); err != nil {
			t.Fatal(err)
		}
	}
	var seen []heard
	for len(seen) < 2 {
		select {
		case h := <-got:
			if h.payload != "probe" {
				seen = append(seen, h)
			}
		case <-ctx.Done():
			t.Fatalf("heard %v, want two and one", seen)
		}
	}
	if want := []heard{{"two", "b"}, {"one", "a"}}; seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("heard %v, want %v", seen, want)
	}
	cancel()
	if err := <-listening; err != nil {
		t.Fatal(err)
	}
}

// A round of payloads goes in one statement, hence one transaction (that
// part is by construction, not asserted here): each payload is heard, in
// order, even when together they are far over a single NOTIFY's
// 8,000-byte limit, and an empty round sends nothing.
func TestNotifySeveralPayloadsInOneTransaction(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	listener := openIn(t, url, schema, storetest.Config{})
	sender := openIn(t, url, schema, storetest.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan string, 64)
	listening := make(chan error, 1)
	go func() {
		listening <- listener.Listen(ctx, []string{"round"}, func(_, p string) { got <- p })
	}()
	awaitListening(ctx, t, sender, "round", got)
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("%d:%s", i, strings.Repeat("x", 7000)))
	}
	if err := sender.Notify(ctx, "round", want...); err != nil {
		t.Fatal(err)
	}
	if err := sender.Notify(ctx, "round"); err != nil { // nothing to send: no statement
		t.Fatal(err)
	}
	for i := 0; i < len(want); {
		select {
		case p := <-got:
			if p == "probe" {
				continue // a late answer to the readiness probe
			}
			if p != want[i] {
				t.Fatalf("payload %d heard as %.10q…, want %.10q…", i, p, want[i])
			}
			i++
		case <-ctx.Done():
			t.Fatalf("heard %d of %d payloads", i, len(want))
		}
	}
	cancel()
	if err := <-listening; err != nil {
		t.Fatal(err)
	}
}

// awaitListening repeats a "probe" NOTIFY on channel from sender until the
// listener's payloads (got) show it: LISTEN runs asynchronously.
func awaitListening(ctx context.Context, t *testing.T, sender *Store, channel string, got <-chan string) {
	t.Helper()
	for {
		if err := sender.Notify(ctx, channel, "probe"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			return
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the listener never heard a probe on %s", channel)
		}
	}
}
