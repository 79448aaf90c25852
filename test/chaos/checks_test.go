package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func hasProblem(problems []string, prefix string) bool {
	for _, p := range problems {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func TestCheckDuplicates(t *testing.T) {
	byText := map[string]string{"hello": "g1"}
	ledger := []ledgerSend{
		{ID: "m1", To: "+15552000001", Text: "hello"},
		{ID: "m2", To: "+15552000001", Text: "hello"},
		{ID: "m3", To: "+15552000002", Text: "hello"},
	}
	dups, problems := checkDuplicates(ledger, byText, nil)
	if dups != 1 || !hasProblem(problems, "DUPLICATE SEND: g1|+15552000001 sent 2 times") {
		t.Fatalf("dups=%d problems=%v; want 1 duplicate of +15552000001", dups, problems)
	}
	// An operator's resolve not_delivered allows exactly one more.
	dups, problems = checkDuplicates(ledger, byText, map[string]int{"g1|+15552000001": 2})
	if dups != 0 || len(problems) != 0 {
		t.Fatalf("with the allowance: dups=%d problems=%v; want none", dups, problems)
	}
	ledger = append(ledger, ledgerSend{ID: "m4", To: "+15552000001", Text: "hello"})
	if dups, _ = checkDuplicates(ledger, byText, map[string]int{"g1|+15552000001": 2}); dups != 1 {
		t.Fatalf("third send with allowance 2: dups=%d; want 1", dups)
	}
	_, problems = checkDuplicates([]ledgerSend{{ID: "x", Text: "not ours"}}, byText, nil)
	if !hasProblem(problems, "ledger row x") {
		t.Fatalf("stray row not reported: %v", problems)
	}
}

func TestRegistryAllowResend(t *testing.T) {
	r := newRegistry()
	r.add(groupView{ID: "g1", Text: "t"}, []string{"+1"})
	r.allowResend("g1", "+1")
	byNumber, byText, allowed := r.snapshot()
	if byNumber["+1"] != "g1" || byText["t"] != "g1" || allowed["g1|+1"] != 2 {
		t.Fatalf("registry = %v %v %v", byNumber, byText, allowed)
	}
	r.allowResend("g1", "+1")
	if _, _, allowed = r.snapshot(); allowed["g1|+1"] != 3 {
		t.Fatalf("second resolve: allowed %d; want 3", allowed["g1|+1"])
	}
}

func journalOf(t *testing.T, ids ...string) []journalEvent {
	t.Helper()
	var evs []journalEvent
	for i, id := range ids {
		b, err := json.Marshal(map[string]any{"event_id": id, "i": 0})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, journalEvent{Seq: uint64(i + 1), Type: "status.observed", Data: b})
	}
	evs = append(evs, journalEvent{Seq: 99, Type: "send.claimed", Data: json.RawMessage(`{"sends":[]}`)})
	return evs
}

func TestJournalEventIDs(t *testing.T) {
	got := journalEventIDs(journalOf(t, "a", "b", "a"))
	if got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("journalEventIDs = %v", got)
	}
}

func TestCheckGroups(t *testing.T) {
	const g1, num = "g1", "+15552000001"
	view := func(status string, attempts int) groupView {
		return groupView{ID: g1, Recipients: []recipientView{{Number: num, Status: status, Attempts: attempts}}}
	}
	rec := func(id, typ, status string, code int) webhookRecord {
		return webhookRecord{EventID: id, EventType: typ, Number: num, Status: status, Code: code}
	}
	base := func(status string, journal []journalEvent, recs ...webhookRecord) checkInput {
		return checkInput{
			groups:   map[string]groupState{g1: {view: view(status, 1), eventIDs: journalEventIDs(journal)}},
			byNumber: map[string]string{num: g1},
			counts:   map[string]int{g1 + "|" + num: 1},
			records:  recs,
			drained:  true,
		}
	}
	tests := []struct {
		name      string
		in        checkInput
		lost      int
		acked     int
		wantProbs []string
	}{
		{"reflected", base("delivered", journalOf(t, "e1", "e2"),
			rec("e1", "message.sent", "sent", 200), rec("e2", "message.finalized", "delivered", 200)), 0, 2, nil},
		{"acked but not in the journal", base("delivered", journalOf(t, "e1"),
			rec("e1", "message.sent", "sent", 200), rec("e2", "message.finalized", "delivered", 200)), 1, 2, []string{"LOST: acknowledged message.finalized e2"}},
		{"in the journal but the status is behind", base("sent", journalOf(t, "e2"),
			rec("e2", "message.finalized", "delivered", 200)), 1, 1, []string{"LOST: acknowledged e2 says delivered"}},
		{"delivered where the event said failed", base("delivered", journalOf(t, "e2"),
			rec("e2", "message.finalized", "delivery_failed", 200)), 1, 1, []string{"LOST: acknowledged e2 says delivery_failed"}},
		{"refused webhooks owe nothing", base("sent", nil,
			rec("e9", "message.finalized", "delivered", 503), rec("e8", "message.finalized", "delivered", 0)), 0, 0, nil},
		{"reply needs only its journal entry", base("delivered", journalOf(t, "r1"),
			rec("r1", "message.received", "", 200)), 0, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkGroups(tt.in)
			if res.lost != tt.lost || res.acked != tt.acked {
				t.Errorf("lost=%d acked=%d; want %d, %d (problems %v)", res.lost, res.acked, tt.lost, tt.acked, res.problems)
			}
			for _, w := range tt.wantProbs {
				if !hasProblem(res.problems, w) {
					t.Errorf("problems %v; want one starting %q", res.problems, w)
				}
			}
			if len(tt.wantProbs) == 0 && len(res.problems) != 0 {
				t.Errorf("unexpected problems %v", res.problems)
			}
		})
	}

	t.Run("other scenario's group and unknown numbers", func(t *testing.T) {
		in := base("delivered", nil)
		in.byNumber["+15559999999"] = "g2"
		in.records = []webhookRecord{
			{EventID: "x", EventType: "message.sent", Number: "+15559999999", Status: "sent", Code: 200},
			{EventID: "y", EventType: "message.sent", Number: "+15550000000", Status: "sent", Code: 200},
		}
		res := checkGroups(in)
		if res.acked != 0 || res.lost != 0 || !hasProblem(res.problems, "acknowledged webhook y (message.sent) about a number no chaos group has") || len(res.problems) != 1 {
			t.Fatalf("res = %+v", res)
		}
	})
	t.Run("unconfirmed resent", func(t *testing.T) {
		in := base("unconfirmed", nil)
		in.counts[g1+"|"+num] = 2
		res := checkGroups(in)
		if res.unconfirmed != 1 || !hasProblem(res.problems, "UNCONFIRMED RESENT") {
			t.Fatalf("res = %+v", res)
		}
		in.counts[g1+"|"+num] = 1
		if res = checkGroups(in); res.unconfirmed != 1 || len(res.problems) != 0 {
			t.Fatalf("one send: res = %+v", res)
		}
	})
	t.Run("phantom", func(t *testing.T) {
		in := base("delivered", nil)
		in.counts = map[string]int{}
		if res := checkGroups(in); !hasProblem(res.problems, "PHANTOM") {
			t.Fatalf("res = %+v", res)
		}
	})
	t.Run("stuck only after a drain", func(t *testing.T) {
		in := base("pending", nil)
		if res := checkGroups(in); !hasProblem(res.problems, "STUCK") {
			t.Fatalf("drained: res = %+v", res)
		}
		in.drained = false
		if res := checkGroups(in); len(res.problems) != 0 {
			t.Fatalf("not drained: res = %+v", res)
		}
	})
}

func TestStatusRankIsForwardOnly(t *testing.T) {
	order := []string{"pending", "sending", "unconfirmed", "sent", "unknown", "delivered", "opted_out"}
	for i := 1; i < len(order); i++ {
		if statusRank(order[i-1]) >= statusRank(order[i]) {
			t.Errorf("rank(%s) >= rank(%s)", order[i-1], order[i])
		}
	}
	if statusRank("failed") != statusRank("delivered") || statusRank("bogus") != -1 {
		t.Error("failed and delivered are both final; unknown words rank -1")
	}
}

func TestQuantileMS(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got, name := quantileMS(ds, 0.99); got != 99 || name != "p99" {
		t.Errorf("0.99-quantile of 1..100 ms = %d (%s); want 99 (p99)", got, name)
	}
	if got, name := quantileMS(ds, 1); got != 100 || name != "max" {
		t.Errorf("1-quantile = %d (%s); want 100 (max)", got, name)
	}
	if got, name := quantileMS([]time.Duration{1500 * time.Microsecond}, 0.99); got != 2 || name != "max" {
		t.Errorf("0.99-quantile of 1.5 ms = %d (%s); want 2 (rounded up), max", got, name)
	}
	if got := p99MS(nil); got != 0 {
		t.Errorf("p99 of nothing = %d; want 0", got)
	}
}

func TestSettled(t *testing.T) {
	g := []groupView{{Recipients: []recipientView{{Status: "delivered"}, {Status: "sent"}}}}
	if ok, left := settled(g, false); ok || left["sent"] != 1 {
		t.Errorf("sent counts as unsettled unless allowed: %v %v", ok, left)
	}
	if ok, _ := settled(g, true); !ok {
		t.Error("sent allowed: want settled")
	}
	g[0].Recipients = append(g[0].Recipients, recipientView{Status: "sending"})
	if ok, _ := settled(g, true); ok {
		t.Error("sending is never settled")
	}
}

func TestJudgeSoak(t *testing.T) {
	flat := func(n int) []soakSample {
		var ss []soakSample
		for i := range n {
			ss = append(ss, soakSample{at: time.Duration(i) * 5 * time.Second, rssKB: 40 << 10, goroutines: 60, fds: 28, walBytes: 4 << 20, p99MS: 100})
		}
		return ss
	}
	if p := judgeSoak(flat(12)); len(p) != 0 {
		t.Fatalf("flat soak: %v", p)
	}
	spike := flat(12)
	spike[5].p99MS = 1999 // one slow window under the provider's budget is tolerated
	if p := judgeSoak(spike); len(p) != 0 {
		t.Fatalf("window under 2 s: %v", p)
	}
	if p := judgeSoak(flat(2)); len(p) != 1 || !strings.HasPrefix(p[0], "only 2 samples") {
		t.Fatalf("short soak: %v", p)
	}
	cases := []struct {
		name   string
		mutate func(*soakSample)
		want   string
	}{
		{"fd leak", func(s *soakSample) { s.fds = 100 }, "file descriptors grew"},
		{"memory leak", func(s *soakSample) { s.rssKB = 400 << 10 }, "RSS grew"},
		{"wal growth", func(s *soakSample) { s.walBytes = 100 << 20 }, "WAL reached"},
		{"database growth", func(s *soakSample) { s.dbBytes, s.recipients = 1<<30, 100000 }, "database reached"},
		{"slow acks", func(s *soakSample) { s.p99MS = 2000 }, "p99 acknowledgement latency"},
	}
	for _, c := range cases {
		ss := flat(12)
		c.mutate(&ss[11])
		if p := judgeSoak(ss); !hasProblem(p, c.want) {
			t.Errorf("%s: problems %v; want %q", c.name, p, c.want)
		}
	}
	// Goroutines: a leak keeps the count up through the last third; one
	// burst in it (sends in flight during a hiccup) is not a leak.
	leak := flat(12)
	for i := 8; i < 12; i++ {
		leak[i].goroutines = 400 + int64(i)
	}
	if p := judgeSoak(leak); !hasProblem(p, "goroutines grew") {
		t.Errorf("goroutine leak: problems %v", p)
	}
	burst := flat(12)
	burst[10].goroutines = 459
	if p := judgeSoak(burst); len(p) != 0 {
		t.Errorf("one burst of goroutines: %v", p)
	}
	// The clean-clone CI run of 2026-12-01 23:56 UTC: two bursts in the
	// last third, the count back at its floor between and after them.
	ci := flat(12)
	for i, g := range []int64{224, 220, 220, 240, 218, 220, 220, 435, 219, 435, 443, 272} {
		ci[i].goroutines = g
	}
	if p := judgeSoak(ci); len(p) != 0 {
		t.Errorf("bursts of goroutines that go back down: %v", p)
	}
	// A leak under bursts still shows in the floor.
	leakyBursts := flat(12)
	for i := 8; i < 12; i++ {
		leakyBursts[i].goroutines = 300 + 150*int64(i%2)
	}
	if p := judgeSoak(leakyBursts); !hasProblem(p, "goroutines grew") {
		t.Errorf("goroutine leak under bursts: problems %v", p)
	}
}

func TestStaleWrites(t *testing.T) {
	st := func(epochs ...uint64) []stampJSON {
		out := make([]stampJSON, len(epochs))
		for i, e := range epochs {
			out[i] = stampJSON{Seq: uint64(i + 1), Epoch: e, Node: "n"}
		}
		return out
	}
	for _, c := range []struct {
		epochs []uint64
		want   int
	}{
		{nil, 0},
		{[]uint64{1, 1, 2, 2, 5}, 0},
		{[]uint64{1, 2, 1, 1, 2}, 2}, // the old owner wrote after the takeover
		{[]uint64{1, 2, 0, 2}, 1},    // no epoch: stamped after a release
		{[]uint64{0, 1}, 1},
	} {
		if got := staleWrites(st(c.epochs...)); got != c.want {
			t.Errorf("staleWrites(%v) = %d, want %d (%s)", c.epochs, got, c.want, staleDetail(st(c.epochs...)))
		}
	}
}

// T8's figures are named for what they are: the largest of ten samples
// is a max, not a p99; from 100 samples on it is a p99.
func TestClusterLinesNameTheQuantile(t *testing.T) {
	ms := func(n int) []time.Duration {
		var ds []time.Duration
		for i := 1; i <= n; i++ {
			ds = append(ds, time.Duration(i)*time.Millisecond)
		}
		return ds
	}
	line, results := clusterLines(10, 0, 0, 0, ms(10), ms(10))
	if want := "CLUSTER iterations=10 pauses=10 stale_writes=0 duplicate_sends=0 lost=0 failover_max_ms=10 handoff_max_ms=10"; line != want {
		t.Errorf("10 samples:\n got %s\nwant %s", line, want)
	}
	if want := []string{"RESULT cluster_failover_max 10 ms", "RESULT cluster_handoff_max 10 ms"}; !slices.Equal(results, want) {
		t.Errorf("10 samples: %q, want %q", results, want)
	}
	line, results = clusterLines(200, 0, 0, 0, ms(200), ms(100))
	if want := "CLUSTER iterations=200 pauses=200 stale_writes=0 duplicate_sends=0 lost=0 failover_p99_ms=198 handoff_p99_ms=99"; line != want {
		t.Errorf("200 and 100 samples:\n got %s\nwant %s", line, want)
	}
	if want := []string{"RESULT cluster_failover_p99 198 ms", "RESULT cluster_handoff_p99 99 ms"}; !slices.Equal(results, want) {
		t.Errorf("200 and 100 samples: %q, want %q", results, want)
	}
}
