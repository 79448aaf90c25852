package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Environment variables that turn a test binary into a crash-test child.
const (
	envCrashChild = "CREWCAST_STORETEST_CRASH_CHILD"
	envCrashDSN   = "CREWCAST_STORETEST_CRASH_DSN"
	envCrashIter  = "CREWCAST_STORETEST_CRASH_ITER"
)

// CrashOptions plugs an engine into Crash.
type CrashOptions struct {
	// NewDSN creates an empty database for the whole test (removed when it
	// ends) and returns an engine-defined string naming it.
	NewDSN func(t *testing.T) string
	// Open opens a store on dsn, in the parent and in the child process.
	Open func(ctx context.Context, dsn string) (store.Store, error)
	// Iterations is how many children are started and killed (default 5).
	Iterations int
	// Settle, when set, waits after each kill until the database has
	// finished with the killed child's sessions. A server may still commit
	// a transaction whose COMMIT it received before the client died: read
	// meanwhile, the journal can show the unit absent and the inbox, read
	// a moment later, its entry processed (TestCrash on PostgreSQL failed
	// once that way under load). nil for an engine inside the child.
	Settle func(t *testing.T, dsn string)
}

const crashKeys = 4

// Crash is the kill -9 test. The calling test re-executes its own binary
// as a child that commits a stream of units (journal events, group and
// delivery projections, inbox acks) and prints each unit's id only after
// Commit returned success. The parent kills the child with SIGKILL after a
// random number of acknowledged units, reopens the database and checks
// that every acknowledged unit is there in full and that no unit is
// partial: its events are present exactly when its delivery row and inbox
// ack are, the group row reflects the journal head, and each key's snapshot
// loads whole (checksum intact) or is absent.
//
// The calling test must call Crash first thing: in the child process Crash
// runs the child's loop and exits the process.
func Crash(t *testing.T, o CrashOptions) {
	if os.Getenv(envCrashChild) == "1" {
		crashChild(o)
		return // not reached: crashChild exits
	}
	if o.Iterations <= 0 {
		o.Iterations = 5
	}
	dsn := o.NewDSN(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("crash test seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	for iter := range o.Iterations {
		killAfter := 1 + rng.IntN(150)
		acked := runCrashChild(t, dsn, iter, killAfter)
		if o.Settle != nil {
			o.Settle(t, dsn)
		}
		verifyCrash(t, o, dsn, iter, acked)
		t.Logf("iteration %d: killed after %d acknowledged units (target %d)", iter, len(acked), killAfter)
	}
}

// runRegexp anchors every level of a test name for -test.run.
func runRegexp(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runCrashChild starts a child, kills it after killAfter acknowledged units
// (or lets it finish on its own) and returns the ids it acknowledged.
func runCrashChild(t *testing.T, dsn string, iter, killAfter int) map[string]bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+runRegexp(t.Name()), "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashDSN+"="+dsn, envCrashIter+"="+strconv.Itoa(iter))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	killed := false
	var childErr []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "committed "):
			acked[strings.TrimPrefix(line, "committed ")] = true
			if len(acked) >= killAfter && !killed {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatalf("kill child: %v", err)
				}
				killed = true
			}
		case strings.HasPrefix(line, "crash-child-error "):
			childErr = append(childErr, line)
		}
	}
	// Lines already in the pipe when the child died were read above: a
	// unit is acknowledged once its line was written.
	waitErr := cmd.Wait()
	if len(childErr) > 0 {
		t.Fatalf("child failed: %v\nstderr: %s", childErr, stderr.String())
	}
	if !killed && waitErr != nil {
		t.Fatalf("child exited on its own with %v\nstderr: %s", waitErr, stderr.String())
	}
	if len(acked) == 0 {
		t.Fatalf("child acknowledged nothing; stderr: %s", stderr.String())
	}
	return acked
}

type crashSnapshot struct {
	Seq uint64 `json:"seq"`
	Pad string `json:"pad"`
}

type crashEvent struct {
	Unit string `json:"unit"`
	Part int    `json:"part"`
}

func crashKey(iter, k int) string { return fmt.Sprintf("crash-%d-g%d", iter, k) }

// crashChild commits units until it is killed or reaches its bound.
func crashChild(o CrashOptions) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stdout, "crash-child-error "+format+"\n", args...)
		os.Exit(3)
	}
	ctx := context.Background()
	iter, err := strconv.Atoi(os.Getenv(envCrashIter))
	if err != nil {
		fail("iteration: %v", err)
	}
	s, err := o.Open(ctx, os.Getenv(envCrashDSN))
	if err != nil {
		fail("open: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(iter)))
	seqs := make([]uint64, crashKeys)
	counts := make([]int, crashKeys)
	next := 0
	deadline := time.Now().Add(20 * time.Second)
	for batch := 0; batch < 2000 && time.Now().Before(deadline); batch++ {
		n := 1 + rng.IntN(4)
		var units []actor.Unit
		var entries []store.InboxEntry
		var ids []string
		for range n {
			k := rng.IntN(crashKeys)
			key := crashKey(iter, k)
			id := fmt.Sprintf("%d-u%d", iter, next)
			next++
			ids = append(ids, id)
			entries = append(entries, store.InboxEntry{Provider: "crash", EventID: id, MessageID: id, Payload: []byte(`{}`)})
			var evs []actor.Event
			for part := range 2 {
				data, _ := json.Marshal(crashEvent{Unit: id, Part: part})
				evs = append(evs, actor.Event{Type: "crash.unit", Data: data})
			}
			counts[k]++
			units = append(units, actor.Unit{Key: key, ExpectSeq: seqs[k], Events: evs, Effects: []any{store.Effects{
				Group:      &store.GroupRow{ID: key, Status: "sending", Counts: map[string]int{"units": counts[k]}, Seq: seqs[k] + 2},
				Deliveries: []store.DeliveryRow{{GroupID: key, Number: id, Status: "sent", Attempts: 1}},
				InboxDone:  []store.InboxRef{{Provider: "crash", EventID: id, Target: key}},
			}}})
			seqs[k] += 2
		}
		if _, err := s.InsertInbox(ctx, entries); err != nil {
			fail("insert inbox: %v", err)
		}
		res, err := s.Commit(ctx, units)
		if err != nil {
			fail("commit: %v", err)
		}
		for i, r := range res {
			if r != nil {
				fail("unit %s: %v", ids[i], r)
			}
		}
		// A snapshot write in flight may be cut by the kill too: it must
		// load whole or not at all, never as corrupt state.
		k := rng.IntN(crashKeys)
		state, _ := json.Marshal(crashSnapshot{Seq: seqs[k], Pad: strings.Repeat("s", 2000+rng.IntN(6000))})
		if err := s.SaveSnapshot(ctx, actor.Snapshot{Key: crashKey(iter, k), Seq: seqs[k], State: state}); err != nil {
			fail("save snapshot: %v", err)
		}
		for _, id := range ids {
			// Written straight to the pipe: once this returns, the parent
			// may count the unit as acknowledged.
			if _, err := fmt.Fprintf(os.Stdout, "committed %s\n", id); err != nil {
				fail("stdout: %v", err)
			}
		}
	}
	if err := s.Close(); err != nil {
		fail("close: %v", err)
	}
	os.Exit(0)
}

// verifyCrash reopens the database and checks iteration iter.
func verifyCrash(t *testing.T, o CrashOptions, dsn string, iter int, acked map[string]bool) {
	t.Helper()
	ctx := context.Background()
	s, err := o.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	present := map[string]string{} // unit -> key
	pending := map[string]bool{}
	var after store.InboxRef
	for {
		page, err := s.PendingInbox(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			pending[e.EventID] = true
		}
		if len(page) < 1000 {
			break
		}
		after = store.InboxRef{Provider: page[len(page)-1].Provider, EventID: page[len(page)-1].EventID}
	}
	for k := range crashKeys {
		key := crashKey(iter, k)
		var evs []actor.Event
		if err := s.Load(ctx, key, 0, func(e actor.Event) error { evs = append(evs, e); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(evs)%2 != 0 {
			t.Fatalf("%s: %d events: a unit was written in part", key, len(evs))
		}
		for i := 0; i < len(evs); i += 2 {
			var a, b crashEvent
			if err := json.Unmarshal(evs[i].Data, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(evs[i+1].Data, &b); err != nil {
				t.Fatal(err)
			}
			if evs[i].Seq != uint64(i+1) || evs[i+1].Seq != uint64(i+2) || a.Unit != b.Unit || a.Part != 0 || b.Part != 1 {
				t.Fatalf("%s: events %d/%d are not one whole unit: %+v %+v", key, i, i+1, a, b)
			}
			present[a.Unit] = key
		}
		g, err := s.GetGroup(ctx, key)
		switch {
		case len(evs) == 0 && err == nil:
			t.Fatalf("%s: group row without events", key)
		case len(evs) > 0 && (err != nil || g.Seq != uint64(len(evs)) || g.Counts["units"] != len(evs)/2):
			t.Fatalf("%s: group row %+v, %v does not match the journal head %d", key, g, err, len(evs))
		}
		switch sn, err := s.LoadSnapshot(ctx, key); {
		case errors.Is(err, actor.ErrNotFound):
		case err != nil:
			t.Fatalf("%s: snapshot after kill: %v", key, err)
		default:
			var st crashSnapshot
			if err := json.Unmarshal(sn.State, &st); err != nil || st.Seq != sn.Seq || sn.Seq > uint64(len(evs)) {
				t.Fatalf("%s: snapshot at seq %d (state %v, %v) does not fit the journal head %d", key, sn.Seq, st.Seq, err, len(evs))
			}
		}
		rows, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: key, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(evs)/2 {
			t.Fatalf("%s: %d delivery rows for %d units", key, len(rows), len(evs)/2)
		}
		for _, d := range rows {
			if present[d.Number] != key {
				t.Fatalf("%s: delivery row of unit %s whose events are absent", key, d.Number)
			}
		}
	}
	for id := range acked {
		if present[id] == "" {
			t.Fatalf("acknowledged unit %s lost", id)
		}
	}
	// Inbox: a present unit's entry is processed; an absent unit's entry is
	// missing or still pending, never processed.
	for i := 0; ; i++ {
		id := fmt.Sprintf("%d-u%d", iter, i)
		isNew, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "crash", EventID: id, Payload: []byte(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		existed := !isNew[0]
		switch {
		case present[id] != "" && (!existed || pending[id]):
			t.Fatalf("unit %s committed but its inbox entry is not processed (existed %v)", id, existed)
		case present[id] == "" && existed && !pending[id]:
			t.Fatalf("unit %s absent but its inbox entry was acknowledged", id)
		}
		if present[id] == "" && !existed && i >= len(present)+8 {
			break // past every unit the child could have started
		}
	}
}
