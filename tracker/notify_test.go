package tracker

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// recordingNotifier records each Notify's time and payload.
type recordingNotifier struct {
	mu       sync.Mutex
	at       []time.Time
	lines    int
	payloads []string
}

func (n *recordingNotifier) Notify(_ context.Context, _ string, payloads ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.at = append(n.at, time.Now())
	for _, payload := range payloads {
		n.lines += strings.Count(payload, "\n") + 1
		n.payloads = append(n.payloads, payload)
	}
	return nil
}

func (n *recordingNotifier) Listen(ctx context.Context, _ []string, _ func(string, string)) error {
	<-ctx.Done()
	return nil
}

func (n *recordingNotifier) counts() (notifies, lines int, last time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.at) > 0 {
		last = n.at[len(n.at)-1]
	}
	return len(n.at), n.lines, last
}

// afterQuietSpell waits 3 × notifyEvery with nothing sent, then calls
// send, and checks that the next NOTIFY (after the n so far) goes within
// notifyEvery/2: a round after a quiet spell is not held back.
func (n *recordingNotifier) afterQuietSpell(t *testing.T, before int, what string, send func()) {
	t.Helper()
	time.Sleep(3 * notifyEvery)
	sent := time.Now()
	send()
	for deadline := time.Now().Add(time.Second); ; {
		if m, _, last := n.counts(); m > before {
			if d := last.Sub(sent); d > notifyEvery/2 {
				t.Errorf("a %s after a quiet spell waited %s", what, d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s after a quiet spell was never sent", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Under load a node's forwards share NOTIFYs (at most one round per
// notifyEvery): each NOTIFY is a write transaction and wakes every
// listening session. The forwards of 20 inbox batches 5 ms apart went out
// in 20 NOTIFYs before; a forward after a quiet spell still goes at once.
func TestForwardsShareNotifiesUnderLoad(t *testing.T) {
	rec := &recordingNotifier{}
	c := &cluster{t: &Tracker{log: slog.New(slog.DiscardHandler)}, cfg: ClusterConfig{Notifier: rec, TTL: 3 * time.Second},
		stop: make(chan struct{}), wake: make(chan wakeUp, 4096), missed: map[int]bool{}}
	go c.notify()
	defer close(c.stop)
	fwd := func(i int) {
		c.send(wakeUp{shard: i % 64, fwd: &forward{Group: "grp_x", Provider: "telnyx", EventID: "e" + string(rune('a'+i%26)),
			Events: []crewcast.Event{{Provider: "telnyx", Kind: crewcast.KindStatus, MessageID: "m", Status: crewcast.StatusDelivered}}}})
	}
	const batches, perBatch = 20, 3
	for b := range batches {
		for i := range perBatch {
			fwd(b*perBatch + i)
		}
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if _, lines, _ := rec.counts(); lines == batches*perBatch || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	n, lines, _ := rec.counts()
	if lines != batches*perBatch {
		t.Fatalf("%d forwards sent, want %d", lines, batches*perBatch)
	}
	// 20 batches over ≥100 ms: about one round per notifyEvery, never
	// one per batch.
	if n > batches/2 {
		t.Errorf("%d NOTIFYs for %d inbox batches 5 ms apart: forwards are not sharing them", n, batches)
	}
	rec.afterQuietSpell(t, n, "forward", func() { fwd(99) })
}

// Under load a node's commits share their changes NOTIFYs too (at most
// one round per notifyEvery): in the ingest benchmark every flush of each
// node's commit batcher sent one, a write transaction that wakes every
// listening session. The changes of 20 commit batches 5 ms apart went out
// in 20 NOTIFYs before; every group's last seq still reaches the others,
// and a change after a quiet spell goes at once.
func TestChangesShareNotifiesUnderLoad(t *testing.T) {
	rec := &recordingNotifier{}
	tr := &Tracker{log: slog.New(slog.DiscardHandler), hub: NewHub()}
	c := &cluster{t: tr, cfg: ClusterConfig{Notifier: rec, TTL: 3 * time.Second}, stop: make(chan struct{})}
	done := make(chan struct{})
	go func() { defer close(done); c.shareChanges() }()
	defer func() { close(c.stop); <-done }()
	for tr.hub.Subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	publish := func(group string, seq uint64) {
		tr.hub.Publish(Change{GroupID: group, Seq: seq, Events: []EventView{{Seq: seq}}})
	}
	const batches = 20
	for b := range batches {
		publish("grp_"+string(rune('a'+b)), uint64(b+1))
		time.Sleep(5 * time.Millisecond)
	}
	want := map[string]bool{}
	for b := range batches {
		want["grp_"+string(rune('a'+b))+":"+strconv.Itoa(b+1)] = true
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		rec.mu.Lock()
		got := 0
		for _, p := range rec.payloads {
			for item := range strings.SplitSeq(p, ",") {
				if want[item] {
					got++
				}
			}
		}
		rec.mu.Unlock()
		if got == batches {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d changes shared", got, batches)
		}
		time.Sleep(5 * time.Millisecond)
	}
	n, _, _ := rec.counts()
	if n > batches/2 {
		t.Errorf("%d NOTIFYs for %d commit batches 5 ms apart: changes are not sharing them", n, batches)
	}
	rec.afterQuietSpell(t, n, "change", func() { publish("grp_late", 1) })
}

// A round's items are packed into as few payloads as fit under
// maxNotifyPayload, in order, none split.
func TestPayloadsPackItemsWhole(t *testing.T) {
	var p payloads
	var items []string
	for i := range 40 {
		items = append(items, strconv.Itoa(i)+":"+strings.Repeat("x", 400+i))
	}
	for _, it := range items {
		p.add(it, '\n')
	}
	out := p.done()
	var back []string
	for _, pl := range out {
		if len(pl) > maxNotifyPayload {
			t.Errorf("a payload of %d bytes", len(pl))
		}
		back = append(back, strings.Split(pl, "\n")...)
	}
	if strings.Join(back, "|") != strings.Join(items, "|") {
		t.Fatalf("items came back changed or out of order: %d of %d", len(back), len(items))
	}
	total := 0
	for _, it := range items {
		total += len(it) + 1
	}
	if want := total/maxNotifyPayload + 1; len(out) > want {
		t.Errorf("%d payloads for %d bytes of items, want at most %d", len(out), total, want)
	}
	var empty payloads
	if got := empty.done(); len(got) != 0 {
		t.Errorf("an empty round gave %d payloads", len(got))
	}
}
