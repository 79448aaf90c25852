package tracker

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

var calloutOptions = []group.Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Cannot", Ack: crewcast.AckNo}}

const confirmedText = "You're on: north gate 7am"

// createCallout creates a callout of n people needing need, in waves of
// size every minute.
func (e *env) createCallout(n, need, size int, mod func(*group.Request)) string {
	e.t.Helper()
	ct := confirmedText
	req := group.Request{From: from, To: nums(n), Text: "Crew call 7am", Responses: calloutOptions,
		Quorum:       &group.Quorum{Response: "1", Count: need},
		CalloutInput: group.CalloutInput{Waves: &group.WavesInput{Size: size, Every: "1m"}, ConfirmedText: &ct}}
	if mod != nil {
		mod(&req)
	}
	id, created, err := e.tr.Create(context.Background(), req, CreateOptions{})
	if err != nil || !created {
		e.t.Fatalf("create: %v %v", created, err)
	}
	return id
}

// replyAt is an answer the provider received at at.
func (e *env) replyAt(num, text, evID string, at time.Time) {
	e.t.Helper()
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound,
		From: num, To: from, Text: text, OccurredAt: at}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) statusesOf(id string) map[string]crewcast.Status {
	e.t.Helper()
	rows, _, err := e.st.ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]crewcast.Status{}
	for _, d := range rows {
		out[d.Number] = d.Status
	}
	return out
}

func (e *env) loadGroup(id string) group.Group {
	e.t.Helper()
	g, ok, err := LoadGroup(context.Background(), e.st, id)
	if err != nil || !ok {
		e.t.Fatalf("load %s: %v %v", id, ok, err)
	}
	return g
}

// textsTo lists the texts sent to each number, in order.
func (e *env) textsTo() map[string][]string {
	out := map[string][]string{}
	for _, s := range e.prov.sent() {
		for _, n := range s.To {
			out[n] = append(out[n], s.Text)
		}
	}
	return out
}

// TestCalloutWavesSelectAndReplace runs a callout through the tracker: 8
// people, need 2, waves of 3 every minute. Wave 1 goes at once; one
// decline does not bring wave 2 early (two texted have not answered); a
// minute later wave 2 goes; two YES fill the quota (each gets
// confirmed_text once), the two never texted become not_needed and no
// wave 3 goes; a later YES is standby with filled_text once; a selected
// person who changes to NO is replaced by the standby, who gets
// confirmed_text.
func TestCalloutWavesSelectAndReplace(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
	n := nums(8)
	id := e.createCallout(8, 2, 3, nil)
	e.settle()
	if got := len(e.prov.sent()); got != 3 {
		t.Fatalf("wave 1: %d sends, want 3", got)
	}
	e.reply(n[0], "2", "r0")
	e.settle()
	if got := len(e.prov.sent()); got != 3 {
		t.Fatalf("after one decline: %d sends, want 3 (no early wave)", got)
	}
	e.clk.Advance(time.Minute)
	e.settle()
	if got := len(e.prov.sent()); got != 6 {
		t.Fatalf("wave 2: %d sends, want 6", got)
	}
	now := e.clk.Now()
	e.replyAt(n[3], "1", "r3", now)
	e.replyAt(n[1], "1", "r1", now)
	e.settle()
	e.replyAt(n[4], "1", "r4", now.Add(time.Second))
	e.settle()
	e.clk.Advance(5 * time.Minute)
	e.settle()
	st := e.statusesOf(id)
	if st[n[6]] != crewcast.StatusNotNeeded || st[n[7]] != crewcast.StatusNotNeeded {
		t.Fatalf("untexted statuses %v", st)
	}
	g := e.loadGroup(id)
	if !g.Recipients[1].Selected || !g.Recipients[3].Selected || !g.Recipients[4].Standby || g.WavesSent != 2 {
		t.Fatalf("selection 1:%+v 3:%+v 4:%+v waves %d", g.Recipients[1].QuotaState, g.Recipients[3].QuotaState,
			g.Recipients[4].QuotaState, g.WavesSent)
	}
	e.reply(n[1], "2", "r1b")
	e.settle()
	g = e.loadGroup(id)
	if g.Recipients[1].Selected || !g.Recipients[4].Selected || !g.Recipients[3].Selected {
		t.Fatalf("after the change: 1:%+v 4:%+v", g.Recipients[1].QuotaState, g.Recipients[4].QuotaState)
	}
	e.clk.Advance(5 * time.Minute)
	e.settle()
	texts := e.textsTo()
	want := map[string][]string{
		n[0]: {"Crew call 7am"}, n[1]: {"Crew call 7am", confirmedText}, n[2]: {"Crew call 7am"},
		n[3]: {"Crew call 7am", confirmedText}, n[4]: {"Crew call 7am", group.DefaultFilledText, confirmedText},
		n[5]: {"Crew call 7am"},
	}
	for _, num := range n {
		got := texts[num]
		for k := range got {
			got[k], _, _ = strings.Cut(got[k], "\n") // the reply hint
		}
		if strings.Join(got, "|") != strings.Join(want[num], "|") {
			t.Errorf("%s got %q, want %q", num, got, want[num])
		}
	}
	keys := map[string]bool{}
	for _, s := range e.prov.sent() {
		if keys[s.IdempotencyKey] {
			t.Fatalf("claim key %s used twice", s.IdempotencyKey)
		}
		keys[s.IdempotencyKey] = true
	}
	types := e.journalTypes(id)
	if types[group.TypeWaveSent] != 2 || types[group.TypeNotNeeded] != 1 || types[group.TypeAutoReplyOutcomes] != 4 {
		t.Fatalf("journal %v", types)
	}
}

// TestCalloutSelectsInProviderOrder: two YES whose webhooks arrive in the
// opposite order of the provider's timestamps, within the settle time,
// are selected in the provider's order.
func TestCalloutSelectsInProviderOrder(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CalloutSettle = 2 * time.Second })
	n := nums(3)
	id := e.createCallout(3, 1, 3, nil)
	e.settle()
	now := e.clk.Now()
	e.replyAt(n[2], "1", "late", now.Add(500*time.Millisecond))
	e.settle()
	e.replyAt(n[1], "1", "early", now)
	e.settle()
	if g := e.loadGroup(id); g.Recipients[1].Selected || g.Recipients[2].Selected {
		t.Fatal("selected before the answers settled")
	}
	e.clk.Advance(3 * time.Second)
	e.settle()
	g := e.loadGroup(id)
	if !g.Recipients[1].Selected || !g.Recipients[2].Standby {
		t.Fatalf("1:%+v 2:%+v; want the earlier answer selected", g.Recipients[1].QuotaState, g.Recipients[2].QuotaState)
	}
}

// TestCalloutAutoReplySkipsOptedOut: a person who opted out after saying
// yes is never sent an auto-reply.
func TestCalloutAutoReplySkipsOptedOut(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
	n := nums(3)
	id := e.createCallout(3, 1, 3, nil)
	e.settle()
	if err := e.st.AddSuppression(context.Background(), store.Suppression{Number: n[2], Reason: store.ReasonStop, CreatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	e.reply(n[1], "1", "r1")
	e.reply(n[2], "1", "r2") // standby, but on the suppression list
	e.settle()
	e.clk.Advance(time.Minute)
	e.settle()
	texts := e.textsTo()
	if len(texts[n[2]]) != 1 || len(texts[n[1]]) != 2 {
		t.Fatalf("texts %v", texts)
	}
	if g := e.loadGroup(id); g.Recipients[2].FilledDone != group.AutoSkipped {
		t.Fatalf("filled reply to the opted-out person: %q, want skipped", g.Recipients[2].FilledDone)
	}
}

// TestCalloutAutoReplyCrashIsUncertainNeverResent: the process dies while
// a confirmed_text call is in flight; a second process on the same
// database records it as uncertain and never sends it again.
func TestCalloutAutoReplyCrashIsUncertainNeverResent(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if req.Text == confirmedText {
			<-block
			return crewcast.SendResult{}, errors.New("process gone")
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	n := nums(2)
	id := e.createCallout(2, 1, 2, nil)
	e.settle()
	e.reply(n[0], "1", "r0")
	e.waitSends("confirmed_text in flight", func(s []crewcast.SendRequest) bool { return countText(confirmedText)(s) == 1 })

	prov2 := &fakeProvider{}
	st2, _ := e.secondProcess(Config{Provider: prov2, CalloutSettle: -1})
	e.clk.Advance(inFlightWake) // the in-flight wake-up falls due
	deadline := time.Now().Add(10 * time.Second)
	for {
		var outcome string
		_ = st2.Load(context.Background(), id, 0, func(ev actor.Event) error {
			if ev.Type == group.TypeAutoReplyOutcomes {
				outcome = string(ev.Data)
			}
			return nil
		})
		if strings.Contains(outcome, `"result":"uncertain"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed auto-reply was not recovered: %q", outcome)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.clk.Advance(time.Hour)
	g, _, err := LoadGroup(context.Background(), st2, id)
	if err != nil {
		t.Fatal(err)
	}
	if g.Recipients[0].ConfirmDone != group.AutoUncertain || len(prov2.sent()) != 0 {
		t.Fatalf("confirm %q, new process sent %+v", g.Recipients[0].ConfirmDone, prov2.sent())
	}
}

// TestCalloutByHand: a dispatcher starts the next wave now, releases a
// selected person (the standby takes the place and gets confirmed_text)
// and selects them again; each is journaled and audited with who asked.
func TestCalloutByHand(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
	ada := store.AuditActor{Type: store.ActorUser, ID: "usr_ada", Name: "Ada"}
	ctx := store.WithAuditActor(context.Background(), ada)
	n := nums(6)
	id := e.createCallout(6, 1, 2, nil)
	e.settle()
	if err := e.tr.StartNextWave(ctx, id, "usr_ada"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := len(e.prov.sent()); got != 4 {
		t.Fatalf("after the wave by hand: %d sends, want 4", got)
	}
	e.reply(n[0], "1", "r0")
	e.settle()
	e.reply(n[3], "1", "r3") // standby
	e.settle()
	if err := e.tr.ReleaseRecipient(ctx, id, n[0], "usr_ada"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	g := e.loadGroup(id)
	if g.Recipients[0].Selected || !g.Recipients[3].Selected {
		t.Fatalf("after the release 0:%+v 3:%+v", g.Recipients[0].QuotaState, g.Recipients[3].QuotaState)
	}
	if err := e.tr.SelectRecipient(ctx, id, n[0], "usr_ada"); err != nil {
		t.Fatal(err)
	}
	if err := e.tr.SelectRecipient(ctx, id, n[1], "usr_ada"); !errors.Is(err, group.ErrState) {
		t.Fatalf("selecting someone who did not say yes: %v", err)
	}
	e.settle()
	if g := e.loadGroup(id); !g.Recipients[0].Selected || !g.Recipients[3].Selected {
		t.Fatalf("after selecting by hand 0:%+v", g.Recipients[0].QuotaState)
	}
	texts := e.textsTo()
	if len(texts[n[0]]) != 2 || len(texts[n[3]]) != 3 || texts[n[3]][2] != confirmedText {
		t.Fatalf("texts %q / %q", texts[n[0]], texts[n[3]])
	}
	got, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range got {
		if a.Actor == ada {
			actions = append(actions, a.Action)
		}
	}
	want := []string{AuditRecipientSelected, AuditRecipientReleased, AuditGroupWaveStarted} // newest first
	if strings.Join(actions, ",") != strings.Join(want, ",") {
		t.Fatalf("audit %v, want %v", actions, want)
	}
}

// TestCalloutAutoRepliesWaitOutQuietHours: a YES that lands in the
// person's quiet hours gets its auto-reply when they end, not before;
// in a critical group at once.
func TestCalloutAutoRepliesWaitOutQuietHours(t *testing.T) {
	for _, critical := range []bool{false, true} {
		e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
		n := nums(2)
		id := e.createCallout(2, 1, 2, func(r *group.Request) {
			r.QuietHours = "12:30-13:30"
			if critical {
				r.Priority = group.PriorityCritical
			}
		})
		e.settle()
		e.clk.Advance(31 * time.Minute) // 12:31, in quiet hours (UTC)
		e.settle()
		e.reply(n[0], "1", "r0")
		e.reply(n[1], "1", "r1")
		e.settle()
		auto := func() int {
			return countText(confirmedText)(e.prov.sent()) + countText(group.DefaultFilledText)(e.prov.sent())
		}
		if critical {
			if got := auto(); got != 2 {
				t.Fatalf("critical: %d auto-replies during quiet hours, want 2 at once", got)
			}
			continue
		}
		if got := auto(); got != 0 {
			t.Fatalf("%d auto-replies during quiet hours, want 0", got)
		}
		e.clk.Advance(time.Hour) // 13:31
		e.settle()
		if got := auto(); got != 2 {
			t.Fatalf("%d auto-replies after quiet hours, want 2", got)
		}
		if g := e.loadGroup(id); g.Recipients[0].ConfirmDone != group.AutoSent || g.Recipients[1].FilledDone != group.AutoSent {
			t.Fatalf("done %q %q", g.Recipients[0].ConfirmDone, g.Recipients[1].FilledDone)
		}
	}
}

// TestCalloutToCrewTextsMembersFirst: a callout to a crew and a few raw
// numbers texts the crew's members first, in crew order, then the numbers
// (docs/design.md §15): with waves of 3, wave 1 is the crew.
func TestCalloutToCrewTextsMembersFirst(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CalloutSettle = -1 })
	n := nums(5)
	crew := []group.RecipientInput{{Number: n[4], Name: "Eve", ContactID: "ct_e"}, {Number: n[2], Name: "Cy", ContactID: "ct_c"},
		{Number: n[3], Name: "Dee", ContactID: "ct_d"}}
	id := e.createCallout(2, 1, 3, func(r *group.Request) {
		r.Crews, r.Resolved = []string{"Gate"}, crew
	})
	e.settle()
	// The send pool's workers call the provider in any order: wave 1 is
	// checked as the set texted, the order as the roster's.
	var got []string
	for _, s := range e.prov.sent() {
		got = append(got, s.To...)
	}
	sort.Strings(got)
	want := []string{n[4], n[2], n[3]}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("wave 1 texted %v, want the crew %v", got, want)
	}
	g := e.loadGroup(id)
	for i, want := range []string{n[4], n[2], n[3], n[0], n[1]} {
		if g.Recipients[i].Number != want {
			t.Errorf("roster[%d] = %s, want %s", i, g.Recipients[i].Number, want)
		}
		if wave := map[bool]int{true: 1, false: 0}[i < 3]; g.Recipients[i].Wave != wave {
			t.Errorf("roster[%d] in wave %d, want %d", i, g.Recipients[i].Wave, wave)
		}
	}
}
